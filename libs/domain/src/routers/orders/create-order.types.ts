import { LIMITS } from '@lop/contract';
import { z } from 'zod';
import { envelopeOf } from '../../http/envelope';
import { createOrderBodySchema, orderSchema } from '../../orders/orders.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const createOrderMeta: PartnerProcedureMeta = {
  scope: 'orders:write',
  successStatus: 201,
  errors: ['conflict', 'not_orderable', 'rate_limited'],
  rateBudget: 'create_order',
  openapi: {
    method: 'POST',
    path: '/v1/orders',
    tags: ['Orders'],
    summary: 'Create an order',
    description:
      'Places a test order. Send a unique `Idempotency-Key` header (max 190 characters): repeating the same key with the same body returns the original 201 response with `Idempotent-Replayed: true`, and a repeat that arrives while the first request is still running waits for it (up to 10 s; then 409 `idempotency_key_in_flight` with `Retry-After`); the same key with a different body is 409. A request that fails creates no order and leaves its key free (see docs/idempotency.md). Personal data (patient, ordering_provider, aoe_answers, clinical_notes) is stored encrypted and never returned. 422 `not_orderable` lists every problem against the requirements profile. 429 means rate limited: honour `Retry-After`.',
    requestHeaders: z.object({
      'Idempotency-Key': z.string().min(1).max(LIMITS.idempotencyKey).meta({ description: 'Unique per intended order; max 190 characters.' }),
    }),
  },
};
// A minimal order: the fields every requirements profile needs. Placeholder ids only.
export const createOrderInput = createOrderBodySchema.meta({
  examples: [
    {
      external_order_id: 'ord-2024-0001',
      program_id: '00000000-0000-4000-8000-000000000001',
      item_id: '00000000-0000-4000-8000-000000000002',
      external_subject_id: 'subject-123',
      collection: 'in_person_draw',
      region: 'US-CA',
    },
  ],
});
export const createOrderOutput = envelopeOf(orderSchema);
