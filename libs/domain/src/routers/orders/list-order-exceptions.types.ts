import { pathId, strictInput } from '../../common-schemas';
import { orderExceptionsSchema } from '../../exceptions/exceptions.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

export const listOrderExceptionsMeta: PartnerProcedureMeta = {
  reads: 'replica',
  audit: { orderId: 'orderId' },
  scope: 'orders:read',
  errors: ['not_found'],
  openapi: {
    method: 'GET',
    path: '/v1/orders/{orderId}/exceptions',
    tags: ['Orders'],
    summary: 'Read the exceptions of an order',
    description:
      'Canonical exceptions of the order, newest first — the same model the laboratory works with. `action_required` is true while an open exception is owned by the partner (each one also emitted `integration.action_required`; when that changes because one is resolved, an `order.updated` carries `action_required_code` — what is left, or `none`). Only structural fields are returned: operator notes, evidence and resolution text are omitted, and no laboratory-native code is guessed. Orders of other clients or environments are 404.',
  },
};
export const listOrderExceptionsInput = strictInput({ orderId: pathId('Order identifier.') });
export const listOrderExceptionsOutput = envelopeOf(orderExceptionsSchema);
