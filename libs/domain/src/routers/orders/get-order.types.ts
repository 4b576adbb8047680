import { pathId, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { orderSchema } from '../../orders/orders.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const getOrderMeta: PartnerProcedureMeta = {
  reads: 'replica',
  audit: { orderId: 'orderId' },
  scope: 'orders:read',
  errors: ['not_found'],
  openapi: { method: 'GET', path: '/v1/orders/{orderId}', tags: ['Orders'], summary: 'Read an order', description: 'The order with its requisition, accession, specimens and transmission. Orders of other clients or environments are 404.' },
};
export const getOrderInput = strictInput({ orderId: pathId('Order identifier.') });
export const getOrderOutput = envelopeOf(orderSchema);
