import { pathId, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { orderSchema } from '../../orders/orders.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const cancelOrderMeta: PartnerProcedureMeta = {
  scope: 'orders:cancel',
  errors: ['not_found', 'conflict', 'rate_limited'],
  openapi: {
    method: 'POST',
    path: '/v1/orders/{orderId}/cancel',
    tags: ['Orders'],
    summary: 'Cancel an order',
    description:
      'Cancels while cancellation is still possible — before a specimen is collected, including while the laboratory retries a failed transmission — and closes an order the laboratory rejected: 200 with the cancelled order, whose open exceptions are resolved with it (the order.cancelled event then carries `action_required_code: none` if you had one to act on). Otherwise 409 `conflict` (issue `order_not_cancellable`) and the order is unchanged. No body is needed.',
  },
};
export const cancelOrderInput = strictInput({ orderId: pathId('Order identifier.') });
export const cancelOrderOutput = envelopeOf(orderSchema);
