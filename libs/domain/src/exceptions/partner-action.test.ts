import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { orders } from '@lop/db';
import { afterAll, describe, expect, it } from 'vitest';
import type { Caller } from '../auth/authenticate';
import { listConsoleOrders } from '../console/order-list';
import { openException, resolveException } from '../laboratory-operations/exceptions';
import { orderResource, type OrderRow } from '../orders/order-resource';
import { getOrder } from '../orders/orders';
import { simulateScenario } from '../sandbox/simulate';
import type { EventData } from '../events/events.schemas';
import { DataProtector } from '../security/protector';
import { eventsOf, newOrder, openTestDatabase } from '../../testing/orders';
import { actionRequiredCodeOf, NO_PARTNER_ACTION, partnerActionOf, partnerActionsOf } from './partner-action';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());
const protector = new DataProtector(randomBytes(32));

const callerOf = (order: OrderRow): Caller => ({ keyId: 'k', clientId: order.clientId, laboratoryId: order.laboratoryId, environment: order.environment, keyPrefix: 'lop_test_0000', scopes: new Set() });
const at = (minute: number) => new Date(Date.UTC(2025, 2, 3, 9, minute));

/** next_action as every door that shows an order states it now. */
async function nextActionEverywhere(order: OrderRow) {
  const caller = callerOf(order);
  const [row] = await db.select().from(orders).where(eq(orders.id, order.id));
  const listed = (await listConsoleOrders(db, protector, caller, {})).orders.find((o) => o.order_id === order.id)!;
  return {
    get_order: (await getOrder(db, caller, order.id)).next_action,
    order_resource: (await orderResource(db, row)).next_action,
    console_order_list: listed.next_action,
  };
}

/** What each event states: its type, next_action and action_required_code. */
const stated = (rows: Awaited<ReturnType<typeof eventsOf>>) =>
  rows.map((e) => {
    const data = e.data as EventData;
    return [e.type, data.next_action, data.action_required_code];
  });

const same = (nextAction: string) => ({ get_order: nextAction, order_resource: nextAction, console_order_list: nextAction });

describe('which open exception decides next_action: one rule on every path', () => {
  it('the newest open partner-owned exception decides — not an older partner one, not a newer laboratory one — in GET order, the console list, events and the simulate response alike', async () => {
    const { order } = await newOrder(db);
    // Oldest to newest: two the partner owns, asking different actions, then a laboratory-owned one.
    const older = await openException(db, { order_id: order.id, category: 'specimen_rejected' }, at(1));
    const newer = await openException(db, { order_id: order.id, category: 'order_information_required' }, at(2));
    const laboratory = await openException(db, { order_id: order.id, category: 'collection_delayed' }, at(3));
    expect([older, newer, laboratory].map((o) => o.exception.owner_role)).toEqual(['partner', 'partner', 'laboratory']);

    // transmit (no event), then acknowledge: accepted, whose own next_action is collect_specimen.
    const simulated = await simulateScenario(db, callerOf(order), { orderId: order.id, scenario: 'happy_path', steps: 2 });
    expect(simulated).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'accepted', next_action: 'provide_information', event_types: ['order.updated'] });
    expect(await nextActionEverywhere(order)).toEqual(same('provide_information'));
    const events = await eventsOf(db, order);
    expect(stated(events)).toEqual([
      ['integration.action_required', 'recollect_specimen', 'specimen_rejected'],
      ['integration.action_required', 'provide_information', 'order_information_required'],
      ['order.updated', 'provide_information', undefined],
    ]);
    expect(await partnerActionOf(db, order.id)).toEqual({ kind: 'open_exception', category: 'order_information_required' });

    // Resolving the newest hands the decision to the older one, on every path and in the event that says so.
    await resolveException(db, { exception_id: newer.exception.exception_id, resolution_text: 'provided' });
    expect(await nextActionEverywhere(order)).toEqual(same('recollect_specimen'));
    expect(stated(await eventsOf(db, order, events.at(-1)!.sequence))).toEqual([
      ['order.updated', 'recollect_specimen', 'specimen_rejected'],
    ]);

    // With only the laboratory's left, the state decides again.
    const before = (await eventsOf(db, order)).at(-1)!.sequence;
    await resolveException(db, { exception_id: older.exception.exception_id, resolution_text: 'recollected' });
    expect(await nextActionEverywhere(order)).toEqual(same('collect_specimen'));
    expect(stated(await eventsOf(db, order, before))).toEqual([['order.updated', 'collect_specimen', 'none']]);
    expect(await partnerActionOf(db, order.id)).toBe(NO_PARTNER_ACTION);
  });

  it('two opened at the same instant: the greater id decides, on every path', async () => {
    const { order } = await newOrder(db);
    const first = await openException(db, { order_id: order.id, category: 'specimen_rejected' }, at(5));
    const second = await openException(db, { order_id: order.id, category: 'order_information_required' }, at(5));
    const winner = first.exception.exception_id > second.exception.exception_id ? first : second;
    const expected = winner === first ? 'recollect_specimen' : 'provide_information';
    expect(await nextActionEverywhere(order)).toEqual(same(expected));
    expect(actionRequiredCodeOf(await partnerActionOf(db, order.id))).toBe(winner.exception.category);
  });

  it('many orders at once read what each order alone reads, and an order with nothing open reads none', async () => {
    const a = (await newOrder(db)).order;
    const b = (await newOrder(db)).order;
    await openException(db, { order_id: a.id, category: 'order_information_required' }, at(1));
    await openException(db, { order_id: b.id, category: 'result_delayed' }, at(1));
    const many = await partnerActionsOf(db, [a.id, b.id]);
    expect(many).toEqual(new Map([[a.id, await partnerActionOf(db, a.id)], [b.id, NO_PARTNER_ACTION]]));
    expect(many.get(a.id)).toEqual({ kind: 'open_exception', category: 'order_information_required' });
    expect(await partnerActionsOf(db, [])).toEqual(new Map());
  });
});
