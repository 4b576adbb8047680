import { lifecycleSchema, LIMITS } from '@lop/contract';
import { z } from 'zod';
import { oneLineCharacters, queryInteger, strictInput } from '../../common-schemas';
import { consoleOrderPageSchema } from '../../console/console.schemas';
import { ORDER_LIST_DEFAULT_LIMIT, ORDER_LIST_MAX_LIMIT } from '../../console/order-list';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
export const listConsoleOrdersMeta: PartnerProcedureMeta = { scope: 'orders:read', reads: 'replica' };
export const listConsoleOrdersInput = strictInput({
  cursor: z.string().max(80).check(oneLineCharacters).optional(),
  limit: queryInteger({ min: 1, max: ORDER_LIST_MAX_LIMIT, default: ORDER_LIST_DEFAULT_LIMIT }),
  external_order_id: z.string().trim().min(1).max(LIMITS.externalOrderId).check(oneLineCharacters).optional(),
  lifecycle: lifecycleSchema.optional(),
  // Sent by tRPC's infinite queries (useInfiniteQuery); pages only go forward, to older orders.
  direction: z.enum(['forward']).optional(),
});
export const listConsoleOrdersOutput = envelopeOf(consoleOrderPageSchema);
