import { randomBytes, randomUUID } from 'node:crypto';
import { type Scope, SCOPES } from '@lop/contract';
import { afterAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { orders, webhookDeliveries, webhookDeliveryAttempts, webhookSubscriptions, type Environment } from '@lop/db';
import { ReadAuditWriter } from '../../audit/read-audit';
import { createKey } from '../../control-plane/control-plane';
import type { RequestContext } from '../../context';
import { StreamWriteGate } from '../../events/write-gate';
import { acceptOrder } from '../../laboratory-operations/acceptance';
import { eventsOf, newOrder, openTestDatabase } from '../../../testing/orders';
import type { OrderRow } from '../../orders/order-resource';
import { forEachOpenApiProcedure } from 'trpc-to-openapi';
import { DataProtector } from '../../security/protector';
import { createCallerFactory } from '../../trpc';
import { partnerRouter } from '../index';

const connection = openTestDatabase();
afterAll(() => connection.close());
const { db, sql } = connection;
const protector = new DataProtector(randomBytes(32));

function callerFor(key: string) {
  const ctx: RequestContext = {
    door: 'console',
    spendRateLimit: async () => undefined,
    db,
    sql,
    requestId: 'req_test',
    authorization: `Bearer ${key}`,
    headers: {},
    protector,
    audit: new ReadAuditWriter(sql),
    writeGate: new StreamWriteGate({ concurrency: 2 }),
    identified: {},
    response: { headers: {} },
  };
  return createCallerFactory(partnerRouter)(ctx);
}

const keyFor = async (order: OrderRow, environment: Environment = order.environment, scopes: Scope[] = [...SCOPES]) =>
  (await createKey(db, { clientId: order.clientId, environment, scopes })).key;

/** Another order of the same client, program and test, created `secondsLater` after the first. */
async function sibling(order: OrderRow, secondsLater: number, environment: Environment = order.environment): Promise<OrderRow> {
  const [row] = await db
    .insert(orders)
    .values({
      laboratoryId: order.laboratoryId,
      clientId: order.clientId,
      environment,
      externalOrderId: `ext-${randomBytes(4).toString('hex')}`,
      programId: order.programId,
      itemId: order.itemId,
      externalSubjectId: order.externalSubjectId,
      collection: 'in_person_draw',
      synthetic: environment === 'sandbox',
      lifecycleDetail: 'received',
      createdAt: new Date(order.createdAt.getTime() + secondsLater * 1000),
    })
    .returning();
  return row;
}

describe('console procedures', () => {
  it('are tRPC only: neither has openapi meta, so neither is a partner REST route', () => {
    const routes: string[] = [];
    forEachOpenApiProcedure(partnerRouter._def.procedures, ({ path }) => routes.push(path));
    expect(routes.filter((r) => r.startsWith('console.'))).toEqual([]);
    expect(Object.keys(partnerRouter._def.procedures)).toEqual(expect.arrayContaining(['console.orders', 'console.eventDeliveries']));
  });

  it('list the caller’s orders newest first, page by page, with program and test names', async () => {
    const { order } = await newOrder(db);
    const second = await sibling(order, 1);
    const third = await sibling(order, 2);
    const api = callerFor(await keyFor(order));

    const first = await api.console.orders({ limit: 2 });
    expect(first.data.orders.map((o) => o.order_id)).toEqual([third.id, second.id]);
    expect(first.data.orders[0]).toMatchObject({ lifecycle: 'pending', next_action: 'wait_for_laboratory', item_name: 'Lipid Panel', item_code: 'T1' });
    expect(first.cursor).toBe(first.data.next_cursor);
    expect(first.data.next_cursor).toEqual(expect.any(String));

    const rest = await api.console.orders({ limit: 2, cursor: first.data.next_cursor! });
    expect(rest.data.orders.map((o) => o.order_id)).toEqual([order.id]);
    expect(rest.data.next_cursor).toBeNull();
  });

  it('never list another client’s or another environment’s orders, and refuse production keys', async () => {
    const mine = await newOrder(db);
    const theirs = await newOrder(db);
    const production = await sibling(mine.order, 5, 'production');
    const sandbox = await callerFor(await keyFor(mine.order)).console.orders({});
    expect(sandbox.data.orders.map((o) => o.order_id)).toEqual([mine.order.id]);
    expect(sandbox.data.orders.map((o) => o.order_id)).not.toContain(production.id);
    // The console door takes sandbox keys only: production orders are reached through REST alone.
    await expect(callerFor(await keyFor(mine.order, 'production')).console.orders({})).rejects.toMatchObject({ errorCode: 'forbidden' });
    expect(sandbox.data.orders.map((o) => o.order_id)).not.toContain(theirs.order.id);
  });

  it('refuse a cursor that is malformed or points at another client’s order', async () => {
    const mine = await newOrder(db);
    const theirs = await newOrder(db);
    const api = callerFor(await keyFor(mine.order));
    await expect(api.console.orders({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: 'BAD_REQUEST', errorCode: 'invalid_request' });
    const foreign = Buffer.from(`order:${theirs.order.id}`).toString('base64url');
    await expect(api.console.orders({ cursor: foreign })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('need the same scopes as the partner routes: orders:read and events:read', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order, 'sandbox', ['catalog:read']));
    await expect(api.console.orders({})).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(api.console.eventDeliveries({ event_ids: [] })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(callerFor('lop_test_nope').console.orders({})).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('show no subscription and no deliveries when the client has no webhook subscription', async () => {
    const { order } = await newOrder(db);
    await acceptOrder(db, { order_id: order.id });
    const [event] = await eventsOf(db, order);
    const view = await callerFor(await keyFor(order)).console.eventDeliveries({ event_ids: [event.id] });
    expect(view.data).toEqual({ subscriptions: [], deliveries: [], undelivered: [] });
  });

  it('show each event’s deliveries with attempts and dead letters, for the caller’s own subscriptions and events only', async () => {
    const { order } = await newOrder(db);
    await acceptOrder(db, { order_id: order.id });
    const [event] = await eventsOf(db, order);
    const other = await newOrder(db);
    await acceptOrder(db, { order_id: other.order.id });
    const [otherEvent] = await eventsOf(db, other.order);

    const subscribe = async (o: OrderRow) =>
      (
        await db
          .insert(webhookSubscriptions)
          .values({ laboratoryId: o.laboratoryId, clientId: o.clientId, environment: 'sandbox', url: 'https://hooks.example.com/lab', eventTypes: ['order.updated'], secretProtected: 'x' })
          .returning()
      )[0];
    const mySubscription = await subscribe(order);
    const theirSubscription = await subscribe(other.order);
    const [dead] = await db
      .insert(webhookDeliveries)
      .values({ subscriptionId: mySubscription.id, eventId: event.id, kind: 'event', state: 'dead_lettered', attemptsMade: 2, lastStatusCode: 410, lastErrorClass: 'permanent', failureReason: 'receiver answered 410' })
      .returning();
    await db.insert(webhookDeliveryAttempts).values([
      { deliveryId: dead.id, attemptNumber: 1, startedAt: new Date(), durationMs: 12, statusCode: 503, errorClass: 'temporary', outcome: 'retry', destinationAddress: '203.0.113.7' },
      { deliveryId: dead.id, attemptNumber: 2, startedAt: new Date(), durationMs: 9, statusCode: 410, errorClass: 'permanent', outcome: 'dead_lettered' },
    ]);
    await db.insert(webhookDeliveries).values({ subscriptionId: theirSubscription.id, eventId: otherEvent.id, kind: 'event', state: 'delivered' });

    const view = await callerFor(await keyFor(order)).console.eventDeliveries({ event_ids: [event.id, otherEvent.id, randomUUID()] });
    expect(view.data.subscriptions).toEqual([expect.objectContaining({ subscription_id: mySubscription.id, status: 'active', event_types: ['order.updated'] })]);
    expect(view.data.deliveries).toHaveLength(1);
    expect(view.data.deliveries[0]).toMatchObject({
      delivery_id: dead.id,
      event_id: event.id,
      state: 'dead_lettered',
      attempts_made: 2,
      last_status_code: 410,
      attempts: [
        { attempt: 1, status_code: 503, outcome: 'retry' },
        { attempt: 2, status_code: 410, outcome: 'dead_lettered' },
      ],
    });
    // The signing secret and the resolved address of the receiver are never part of the view.
    expect(JSON.stringify(view.data)).not.toMatch(/secret|203\.0\.113\.7/);
  });
});

describe('console session', () => {
  it('describes the key in use: prefix, environment, scopes it has and lacks, expiry; never the key or its hash', async () => {
    const { order } = await newOrder(db);
    const expiresAt = new Date(Date.now() + 86_400_000);
    const created = await createKey(db, { clientId: order.clientId, environment: 'sandbox', scopes: ['orders:read', 'events:read'], expiresAt });
    const session = (await callerFor(created.key).console.session({})).data;
    expect(session).toMatchObject({
      key_id: created.key_id,
      environment: 'sandbox',
      scopes: ['orders:read', 'events:read'],
      missing_scopes: SCOPES.filter((s) => s !== 'orders:read' && s !== 'events:read'),
      expires_at: expiresAt.toISOString(),
      client_id: order.clientId,
    });
    expect(created.key.startsWith(session.key_prefix)).toBe(true);
    expect(session.key_prefix.length).toBeLessThan(created.key.length / 2);
    expect(JSON.stringify(session)).not.toContain(created.key);
    await expect(callerFor(await keyFor(order, 'production')).console.session({})).rejects.toMatchObject({ errorCode: 'forbidden' });
  });
});

describe('console order list filters', () => {
  it('search by part of the external order id, any case, with % and _ taken literally, and filter by lifecycle', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const named = async (externalOrderId: string, secondsLater: number) => {
      const row = await sibling(order, secondsLater);
      await db.update(orders).set({ externalOrderId }).where(eq(orders.id, row.id));
      return row;
    };
    const a = await named('Clinic_A-0001', 1);
    const b = await named('clinicXa-0002', 2);
    const c = await named('other-100%', 3);
    await acceptOrder(db, { order_id: a.id });

    const search = async (external_order_id: string) => (await api.console.orders({ external_order_id })).data.orders.map((o) => o.order_id);
    expect(await search('clinic')).toEqual([b.id, a.id]);
    expect(await search('c_a')).toEqual([a.id]);
    expect(await search('100%')).toEqual([c.id]);
    expect(await search('%')).toEqual([c.id]);
    const active = (await api.console.orders({ lifecycle: 'active' })).data.orders;
    expect(active.map((o) => o.order_id)).toEqual([a.id]);
    expect(active[0].lifecycle).toBe('active');
    expect((await api.console.orders({ lifecycle: 'pending', external_order_id: 'clinic' })).data.orders.map((o) => o.order_id)).toEqual([b.id]);
  });
});

describe('console order scenarios', () => {
  it('come from the server’s progress: steps applied by any caller, and only scenarios whose next step can run are available', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const fresh = (await api.console.orderScenarios({ orderId: order.id })).data;
    expect(fresh.lifecycle_detail).toBe('received');
    expect(fresh.scenarios.every((s) => s.available && s.status === 'not_started' && s.steps_applied === 0)).toBe(true);

    // Another caller (a partner's own code with another key) moves the order.
    await callerFor(await keyFor(order)).sandbox.simulate({ orderId: order.id, scenario: 'happy_path', steps: 3 });
    const moved = (await api.console.orderScenarios({ orderId: order.id })).data;
    const happy = moved.scenarios.find((s) => s.scenario === 'happy_path')!;
    expect(happy).toMatchObject({ status: 'in_progress', steps_applied: 3, available: true, refusal: null });
    expect(happy.step_details.map((s) => s.applied)).toEqual(happy.step_details.map((s) => s.step <= 3));
    expect(happy.step_details[1]).toMatchObject({ name: 'acknowledge', requires_lifecycle_detail: 'transmitted', leads_to: 'accepted' });
    expect(moved.scenarios.filter((s) => s.available).map((s) => s.scenario)).toEqual(['happy_path']);
    expect(moved.scenarios.find((s) => s.scenario === 'corrected_result')!.refusal).toMatch(/starts from a newly created order/);

    await api.sandbox.simulate({ orderId: order.id, scenario: 'happy_path' });
    const done = (await api.console.orderScenarios({ orderId: order.id })).data.scenarios.find((s) => s.scenario === 'happy_path')!;
    expect(done).toMatchObject({ status: 'completed', available: false, refusal: expect.stringMatching(/already run all 9 steps/) });
  });

  it('are another client’s business: 404 for their order', async () => {
    const mine = await newOrder(db);
    const theirs = await newOrder(db);
    await expect(callerFor(await keyFor(mine.order)).console.orderScenarios({ orderId: theirs.order.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
