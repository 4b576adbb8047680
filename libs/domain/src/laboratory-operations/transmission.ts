import type { LifecycleDetail } from '@lop/contract';
import type { Database } from '@lop/db';
import { nextState } from '../orders/lifecycle';
import { changeOrderState } from '../orders/state-change';
import { insertException } from './exceptions';
import { operateOnOrder } from './operation';
import { operatorException } from './operator-views';
import { issueRequisition } from './requisition';

/**
 * The order is sent to the laboratory system: one more attempt, awaiting acknowledgement. After a
 * failed transmission this is the laboratory's retry, which settles the transmission_failed exception.
 */
export async function transmitOrder(db: Database, input: { order_id: string }, now = new Date()) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    await changeOrderState(
      tx,
      order,
      'transmit',
      {
        patch: { transmissionStatus: 'sent', ackStatus: 'pending', transmissionAttemptNo: order.transmissionAttemptNo + 1, sentAt: now },
        settles: { category: 'transmission_failed', resolution: 'The laboratory transmitted the order again.' },
      },
      now,
    );
    return {};
  });
}

/**
 * The laboratory system acknowledges a transmitted order. Accepted issues the requisition;
 * rejected fails the order with an `order_rejected` exception the partner must act on.
 */
export async function acknowledgeOrder(
  db: Database,
  input: { order_id: string; status: 'accepted' | 'rejected'; external_order_ref?: string; requisition_id?: string; laboratory_reference?: string; reason?: string },
  now = new Date(),
) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    const acknowledged = { ackStatus: input.status, acknowledgedAt: now, externalOrderRef: input.external_order_ref ?? order.externalOrderRef };
    if (input.status === 'accepted') {
      await changeOrderState(tx, order, 'acknowledge_accepted', { patch: { ...acknowledged, ...issueRequisition(order, input, now) } }, now);
      return { exception: null };
    }
    nextState(order.lifecycleDetail as LifecycleDetail, 'acknowledge_rejected');
    const opened = await insertException(tx, order, { category: 'order_rejected', operator_notes: input.reason }, now);
    await changeOrderState(tx, order, 'acknowledge_rejected', { patch: acknowledged, events: opened.events }, now);
    return { exception: operatorException(opened.row) };
  });
}

/**
 * Transmission failed: the order waits for the laboratory's retry with a laboratory-owned,
 * retryable `transmission_failed` exception. The partner has nothing to do (it may still cancel).
 */
export async function failTransmission(
  db: Database,
  input: { order_id: string; reason?: string; source_exception_type?: string; source_adapter_key?: string },
  now = new Date(),
) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    nextState(order.lifecycleDetail as LifecycleDetail, 'fail_transmission');
    const opened = await insertException(
      tx,
      order,
      { category: 'transmission_failed', operator_notes: input.reason, source_exception_type: input.source_exception_type, source_adapter_key: input.source_adapter_key },
      now,
    );
    await changeOrderState(tx, order, 'fail_transmission', { patch: { transmissionStatus: 'failed' }, events: opened.events }, now);
    return { exception: operatorException(opened.row) };
  });
}
