import type { Database } from '@lop/db';
import { changeOrderState } from '../orders/state-change';
import { operateOnOrder } from './operation';

/** The laboratory cancels the order (order.cancelled); an issued requisition is cancelled with it. */
export async function cancelByLaboratory(db: Database, input: { order_id: string }, now = new Date()) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    await changeOrderState(tx, order, 'cancel_by_laboratory', { patch: order.requisitionState === 'issued' ? { requisitionState: 'cancelled' } : {} }, now);
    return {};
  });
}
