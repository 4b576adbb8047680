import { afterAll, describe, expect, it } from 'vitest';
import { listOrderExceptions } from '../orders/order-exceptions';
import { openException, resolveException, listOperatorExceptions } from './exceptions';
import { driveTo, newOrder, openTestDatabase, snapshot } from '../../testing/orders';
import type { Caller } from '../auth/authenticate';
import type { OrderRow } from '../orders/order-resource';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

const callerOf = (order: OrderRow): Caller => ({ keyId: 'k', clientId: order.clientId, laboratoryId: order.laboratoryId, environment: order.environment, keyPrefix: 'lop_test_0000', scopes: new Set() });

describe('the canonical exception model', () => {
  it('opens with the category defaults, overridable; stores notes and resolution text that partners never see', async () => {
    const { order } = await newOrder(db);
    const t0 = new Date('2025-03-03T09:00:00Z');
    const first = await openException(db, { order_id: order.id, category: 'result_delayed', operator_notes: 'analyzer down' }, t0);
    expect(first.exception).toMatchObject({ category: 'result_delayed', severity: 'info', owner_role: 'laboratory', entity_type: 'result', retryable: false, status: 'open', source: { exception_type: null, domain: 'result', adapter_key: null } });
    const second = await openException(
      db,
      { order_id: order.id, category: 'order_information_required', severity: 'critical', retryable: true, source_exception_type: 'MISSING_DX', source_adapter_key: 'hl7v2-orm', operator_notes: 'call the clinic' },
      new Date('2025-03-03T10:00:00Z'),
    );
    const resolved = await resolveException(db, { exception_id: first.exception.exception_id, resolution_text: 'analyzer repaired', operator_notes: 'ticket 42' }, new Date('2025-03-03T11:00:00Z'));
    expect(resolved.exception).toMatchObject({ status: 'resolved', resolved_at: '2025-03-03T11:00:00.000Z', resolution_text: 'analyzer repaired', operator_notes: 'ticket 42' });

    const partner = await listOrderExceptions(db, callerOf(order), order.id);
    expect(partner).toMatchObject({ order_id: order.id, count: 2, action_required: true });
    expect(partner.exceptions.map((e) => e.exception_id)).toEqual([second.exception.exception_id, first.exception.exception_id]);
    expect(partner.exceptions[0]).toEqual({
      exception_id: second.exception.exception_id,
      category: 'order_information_required',
      severity: 'critical',
      status: 'open',
      owner_role: 'partner',
      entity_type: 'order',
      retryable: true,
      opened_at: '2025-03-03T10:00:00.000Z',
      resolved_at: null,
      source: { exception_type: 'MISSING_DX', domain: 'order', adapter_key: 'hl7v2-orm' },
    });
    const text = JSON.stringify(partner);
    for (const secret of ['analyzer down', 'analyzer repaired', 'ticket 42', 'call the clinic']) expect(text).not.toContain(secret);

    const operator = await listOperatorExceptions(db, { order_id: order.id });
    expect(operator.exceptions.map((e) => e.operator_notes)).toEqual(['call the clinic', 'ticket 42']);
  });

  it('action_required is false once every partner-owned exception is resolved', async () => {
    const { order } = await newOrder(db);
    const opened = await openException(db, { order_id: order.id, category: 'order_information_required' });
    expect((await listOrderExceptions(db, callerOf(order), order.id)).action_required).toBe(true);
    await resolveException(db, { exception_id: opened.exception.exception_id, resolution_text: 'done' });
    expect(await listOrderExceptions(db, callerOf(order), order.id)).toMatchObject({ count: 1, action_required: false });
  });

  it('resolving twice is refused and changes nothing', async () => {
    const { order } = await newOrder(db);
    const opened = await openException(db, { order_id: order.id, category: 'collection_delayed' });
    await resolveException(db, { exception_id: opened.exception.exception_id, resolution_text: 'first' });
    const before = await snapshot(db, order.id);
    await expect(resolveException(db, { exception_id: opened.exception.exception_id, resolution_text: 'second' })).rejects.toMatchObject({ kind: 'conflict' });
    expect(await snapshot(db, order.id)).toEqual(before);
  });

  it('an entity_id must belong to the order', async () => {
    const { order } = await newOrder(db);
    const other = await newOrder(db);
    await driveTo(db, other.order.id, 'specimen_collected');
    const [specimen] = (await snapshot(db, other.order.id)).specimens;
    await expect(openException(db, { order_id: order.id, category: 'specimen_rejected', entity_id: specimen.id })).rejects.toMatchObject({ kind: 'invalid' });
    expect((await snapshot(db, order.id)).exceptions).toEqual([]);
  });

  it('unknown orders and exceptions are not_found', async () => {
    const missing = '00000000-0000-4000-8000-000000000002';
    await expect(openException(db, { order_id: missing, category: 'result_delayed' })).rejects.toMatchObject({ kind: 'not_found' });
    await expect(resolveException(db, { exception_id: missing, resolution_text: 'x' })).rejects.toMatchObject({ kind: 'not_found' });
  });
});
