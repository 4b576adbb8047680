import type { Database } from '@lop/db';
import { changeOrderState } from '../orders/state-change';
import { operateOnOrder } from './operation';
import { issueRequisition } from './requisition';

/** The laboratory accepts the order for collection, issuing the requisition if acknowledgement has not. */
export async function acceptOrder(db: Database, input: { order_id: string; requisition_id?: string; laboratory_reference?: string }, now = new Date()) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    await changeOrderState(tx, order, 'accept', { patch: issueRequisition(order, input, now) }, now);
    return {};
  });
}
