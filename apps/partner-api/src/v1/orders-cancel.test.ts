import { LIFECYCLE_DETAILS, type LifecycleDetail } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { orders } from '@lop/db';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { driveOrderTo, orderBody, ordersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

/** DESIGN §5: every lifecycle_detail, and those from which a partner may cancel (a failed order included: never a dead end). */
const ALL_STATES: LifecycleDetail[] = [
  'received',
  'transmitted',
  'accepted',
  'awaiting_collection',
  'specimen_collected',
  'in_transit',
  'received_by_laboratory',
  'in_testing',
  'recollection_required',
  'partial_results',
  'final_results',
  'corrected_results',
  'cancelled_by_partner',
  'cancelled_by_laboratory',
  'rejected_by_laboratory',
  'transmission_failed',
];
const CANCELLABLE: LifecycleDetail[] = ['received', 'transmitted', 'transmission_failed', 'accepted', 'awaiting_collection', 'rejected_by_laboratory'];

describe('POST /v1/orders/{orderId}/cancel in every lifecycle state', () => {
  const scene = useScene({ rateLimit: false, client: true });
  const { api, tenant, client, connection, sql } = scene;

  const orderIn = async (state: LifecycleDetail): Promise<string> => {
    const order = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject)), 201);
    await driveOrderTo(connection.db, order.order_id, state);
    return order.order_id;
  };
  const eventsOf = (orderId: string) => sql<{ type: string; sequence: number; data: any }[]>`select type, sequence, data from events where order_id = ${orderId} order by sequence`;

  it('the test covers every lifecycle_detail the domain knows', () => {
    expect(Object.keys(LIFECYCLE_DETAILS).sort()).toEqual([...ALL_STATES].sort());
  });

  it.each(CANCELLABLE)('%s → 200 with the cancelled order and one order.cancelled event', async (state) => {
    const orderId = await orderIn(state);
    const before = await eventsOf(orderId);

    const cancelled = expectSuccess(await client.cancel(orderId));
    expect(cancelled).toMatchObject({ order_id: orderId, lifecycle: 'cancelled', lifecycle_detail: 'cancelled_by_partner', next_action: 'none' });
    expect(expectSuccess(await client.get(orderId))).toEqual(cancelled);

    const after = await eventsOf(orderId);
    expect(after).toHaveLength(before.length + 1);
    const event = after[after.length - 1];
    expect(event.type).toBe('order.cancelled');
    expect(event.data).toMatchObject({ order_id: orderId, lifecycle: 'cancelled', next_action: 'none' });
  });

  it.each(ALL_STATES.filter((s) => !CANCELLABLE.includes(s)))('%s → 409 conflict order_not_cancellable; the order is unchanged and no event is emitted', async (state) => {
    const orderId = await orderIn(state);
    const before = expectSuccess(await client.get(orderId));
    const [row] = await connection.db.select().from(orders).where(eq(orders.id, orderId));
    const events = await eventsOf(orderId);

    const error = expectError(await client.cancel(orderId), 409, 'conflict');
    expect(error.details![0].issue).toBe('order_not_cancellable');

    expect(expectSuccess(await client.get(orderId))).toEqual(before);
    expect((await connection.db.select().from(orders).where(eq(orders.id, orderId)))[0]).toEqual(row);
    expect(await eventsOf(orderId)).toEqual(events);
  });

  it('cancelling twice: the second is 409 and emits nothing', async () => {
    const orderId = await orderIn('received');
    expectSuccess(await client.cancel(orderId));
    const events = await eventsOf(orderId);
    expect(expectError(await client.cancel(orderId), 409, 'conflict').details![0].issue).toBe('order_not_cancellable');
    expect(await eventsOf(orderId)).toEqual(events);
  });

  it('concurrent cancels of one order: one 200, the others 409, exactly one order.cancelled event', async () => {
    const orderId = await orderIn('accepted');
    const responses = await Promise.all(Array.from({ length: 8 }, () => client.cancel(orderId)));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
    for (const response of responses.filter((r) => r.status !== 200)) expectError(response, 409, 'conflict');
    expect((await eventsOf(orderId)).filter((e) => e.type === 'order.cancelled')).toHaveLength(1);
  });

  it('an issued requisition is reported cancelled with the order', async () => {
    const orderId = await orderIn('accepted');
    await connection.db.update(orders).set({ requisitionState: 'issued', requisitionId: 'REQ-1' }).where(eq(orders.id, orderId));
    expect(expectSuccess(await client.cancel(orderId)).requisition).toMatchObject({ state: 'cancelled', requisition_id: 'REQ-1' });
  });

  it('a key without orders:cancel cannot cancel (403) and the order stays as it was', async () => {
    const orderId = await orderIn('received');
    const before = expectSuccess(await client.get(orderId));
    const noCancel = ordersClient(api, await tenant.key({ scopes: ['orders:read', 'orders:write'] }));
    expectError(await noCancel.cancel(orderId), 403, 'forbidden');
    expect(expectSuccess(await client.get(orderId))).toEqual(before);
  });
});
