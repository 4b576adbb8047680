import { afterAll, describe, expect, it } from 'vitest';
import type { Caller } from '../auth/authenticate';
import { listOrderExceptions } from '../orders/order-exceptions';
import type { OrderRow } from '../orders/order-resource';
import { acceptOrder } from './acceptance';
import { cancelByLaboratory } from './cancellation';
import { listOperatorExceptions } from './exceptions';
import { driveTo, newOrder, openTestDatabase } from '../../testing/orders';
import { acknowledgeOrder, failTransmission, transmitOrder } from './transmission';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

const at = (iso: string) => new Date(iso);
const callerOf = (order: OrderRow): Caller => ({ keyId: 'k', clientId: order.clientId, laboratoryId: order.laboratoryId, environment: order.environment, keyPrefix: 'lop_test_0000', scopes: new Set() });

describe('transmission and acknowledgement', () => {
  it('transmit marks the transmission sent, counts the attempt and awaits acknowledgement', async () => {
    const { order } = await newOrder(db);
    const { order: sent } = await transmitOrder(db, { order_id: order.id }, at('2025-03-01T10:00:00Z'));
    expect(sent).toMatchObject({ lifecycle: 'pending', lifecycle_detail: 'transmitted', next_action: 'wait_for_laboratory' });
    expect(sent.transmission).toEqual({ status: 'sent', ack_status: 'pending', external_order_ref: null, attempt_no: 1, sent_at: '2025-03-01T10:00:00.000Z', acknowledged_at: null });
    expect(sent.requisition.state).toBe('not_issued');
  });

  it('an accepted acknowledgement records the reference and issues the requisition', async () => {
    const { order } = await newOrder(db);
    await transmitOrder(db, { order_id: order.id });
    const { order: acked } = await acknowledgeOrder(
      db,
      { order_id: order.id, status: 'accepted', external_order_ref: 'LIS-000123', requisition_id: 'REQ-1', laboratory_reference: 'LAB-9' },
      at('2025-03-01T10:05:00Z'),
    );
    expect(acked).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'accepted', next_action: 'collect_specimen' });
    expect(acked.transmission).toMatchObject({ ack_status: 'accepted', external_order_ref: 'LIS-000123', acknowledged_at: '2025-03-01T10:05:00.000Z', attempt_no: 1 });
    expect(acked.requisition).toEqual({ state: 'issued', requisition_id: 'REQ-1', laboratory_reference: 'LAB-9', created_at: '2025-03-01T10:05:00.000Z', document: { state: 'not_modeled' } });
  });

  it('accept after an accepted acknowledgement keeps the issued requisition', async () => {
    const { order } = await newOrder(db);
    await transmitOrder(db, { order_id: order.id });
    const { order: acked } = await acknowledgeOrder(db, { order_id: order.id, status: 'accepted' });
    expect(acked.requisition.requisition_id).toMatch(/^REQ-[0-9A-HJKMNP-TV-Z]{10}$/);
    const { order: accepted } = await acceptOrder(db, { order_id: order.id, requisition_id: 'REQ-OTHER' });
    expect(accepted.lifecycle_detail).toBe('awaiting_collection');
    expect(accepted.requisition).toEqual(acked.requisition);
  });

  it('accept without transmission issues the requisition itself', async () => {
    const { order } = await newOrder(db);
    const { order: accepted } = await acceptOrder(db, { order_id: order.id });
    expect(accepted).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'awaiting_collection', next_action: 'collect_specimen' });
    expect(accepted.requisition.state).toBe('issued');
    expect(accepted.requisition.laboratory_reference).toMatch(/^LAB-/);
    expect(accepted.transmission).toMatchObject({ status: 'not_sent', ack_status: 'not_requested', attempt_no: 0 });
  });

  it('a rejected acknowledgement fails the order with an order_rejected exception for the partner', async () => {
    const { order } = await newOrder(db);
    await transmitOrder(db, { order_id: order.id });
    const outcome = await acknowledgeOrder(db, { order_id: order.id, status: 'rejected', reason: 'test code retired' });
    expect(outcome.order).toMatchObject({ lifecycle: 'failed', lifecycle_detail: 'rejected_by_laboratory', next_action: 'resolve_exception' });
    expect(outcome.order.transmission.ack_status).toBe('rejected');
    expect(outcome.exception).toMatchObject({ category: 'order_rejected', owner_role: 'partner', entity_type: 'order', entity_id: order.id, status: 'open', operator_notes: 'test code retired' });
  });

  it('a failed transmission leaves the order pending with a laboratory-owned, retryable transmission_failed exception', async () => {
    const { order } = await newOrder(db);
    await transmitOrder(db, { order_id: order.id });
    const outcome = await failTransmission(db, { order_id: order.id, reason: 'connection reset', source_exception_type: 'HL7_NAK_AE', source_adapter_key: 'hl7v2-orm' });
    expect(outcome.order).toMatchObject({ lifecycle: 'pending', lifecycle_detail: 'transmission_failed', next_action: 'wait_for_laboratory' });
    expect(outcome.order.transmission).toMatchObject({ status: 'failed', attempt_no: 1 });
    expect(outcome.exception).toMatchObject({
      category: 'transmission_failed',
      severity: 'error',
      owner_role: 'laboratory',
      retryable: true,
      status: 'open',
      source: { exception_type: 'HL7_NAK_AE', domain: 'transmission', adapter_key: 'hl7v2-orm' },
      operator_notes: 'connection reset',
    });
    expect(await listOrderExceptions(db, callerOf(order), order.id)).toMatchObject({ action_required: false, count: 1 });
  });

  it('the laboratory retransmits a failed transmission: a new attempt, the exception resolved, and it can fail and be retried again', async () => {
    const { order } = await newOrder(db);
    await transmitOrder(db, { order_id: order.id }, at('2025-03-01T10:00:00Z'));
    await failTransmission(db, { order_id: order.id }, at('2025-03-01T10:01:00Z'));
    const retried = await transmitOrder(db, { order_id: order.id }, at('2025-03-01T10:30:00Z'));
    expect(retried.order).toMatchObject({ lifecycle: 'pending', lifecycle_detail: 'transmitted', next_action: 'wait_for_laboratory' });
    expect(retried.order.transmission).toMatchObject({ status: 'sent', ack_status: 'pending', attempt_no: 2, sent_at: '2025-03-01T10:30:00.000Z' });
    const [first] = (await listOperatorExceptions(db, { order_id: order.id })).exceptions;
    expect(first).toMatchObject({ category: 'transmission_failed', status: 'resolved', resolved_at: '2025-03-01T10:30:00.000Z', resolution_text: 'The laboratory transmitted the order again.' });

    await failTransmission(db, { order_id: order.id }, at('2025-03-01T10:31:00Z'));
    const third = await transmitOrder(db, { order_id: order.id }, at('2025-03-01T11:00:00Z'));
    expect(third.order.transmission.attempt_no).toBe(3);
    const { order: accepted } = await acknowledgeOrder(db, { order_id: order.id, status: 'accepted' });
    expect(accepted).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'accepted', next_action: 'collect_specimen' });
    expect(await listOrderExceptions(db, callerOf(order), order.id)).toMatchObject({ action_required: false, count: 2, exceptions: [{ status: 'resolved' }, { status: 'resolved' }] });
  });

  it('the laboratory may give up on a failed transmission or a rejected order: cancelling resolves the open exception', async () => {
    for (const state of ['transmission_failed', 'rejected_by_laboratory'] as const) {
      const { order } = await newOrder(db);
      await driveTo(db, order.id, state);
      const { order: cancelled } = await cancelByLaboratory(db, { order_id: order.id });
      expect(cancelled, state).toMatchObject({ lifecycle: 'cancelled', lifecycle_detail: 'cancelled_by_laboratory', next_action: 'none' });
      const listed = await listOrderExceptions(db, callerOf(order), order.id);
      expect(listed, state).toMatchObject({ action_required: false, count: 1, exceptions: [{ status: 'resolved' }] });
    }
  });

  it('cancel by laboratory cancels the order and its issued requisition', async () => {
    const { order } = await newOrder(db);
    await acceptOrder(db, { order_id: order.id });
    const { order: cancelled } = await cancelByLaboratory(db, { order_id: order.id });
    expect(cancelled).toMatchObject({ lifecycle: 'cancelled', lifecycle_detail: 'cancelled_by_laboratory', next_action: 'none' });
    expect(cancelled.requisition.state).toBe('cancelled');
  });
});
