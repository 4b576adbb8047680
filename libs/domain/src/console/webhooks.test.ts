import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SCOPES } from '@lop/contract';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { listPartitions, webhookDeliveries, webhookDeliveryAttempts, webhookSubscriptions, type Environment } from '@lop/db';
import { ReadAuditWriter } from '../audit/read-audit';
import { authenticate, type Caller } from '../auth/authenticate';
import { createKey } from '../control-plane/control-plane';
import type { RequestContext } from '../context';
import type { EventDraft } from '../events/append';
import { StreamWriteGate } from '../events/write-gate';
import { acceptOrder } from '../laboratory-operations/acceptance';
import { eventsOf, newOrder, openTestDatabase } from '../../testing/orders';
import type { OrderRow } from '../orders/order-resource';
import { partnerRouter } from '../routers';
import { DataProtector } from '../security/protector';
import { createCallerFactory } from '../trpc';
import { openDeliveryQueue, type DeliveryQueue } from '../webhooks/delivery-queue';
import { attemptBuckets, attemptBucketsStatement } from '../webhooks/delivery-store';
import { RECOVER_SETTLE_SECONDS } from '../webhooks/deliveries';
import { appendEvents, attachDeliveryQueue } from '../webhooks/outbox';
import { consoleDeliveryAttemptSchema, consoleDeliverySchema, consoleWebhookAttemptSchema, consoleWebhookDeliverySchema } from './console.schemas';
import { BUCKET_ATTEMPTS_MAX, createWebhookEndpoint, getWebhookEndpointHealth, healthWindow, listWebhookBucketAttempts } from './webhooks';

const connection = openTestDatabase();
const { db, sql: client } = connection;
const protector = new DataProtector(randomBytes(32));
const destination = { allowLoopback: true, servicePorts: [{ port: 3000, role: 'partner API (PORT)' }] };
let queue: DeliveryQueue;
let detach: () => void;
let receiver: Server;
let receiverUrl: string;

beforeAll(async () => {
  queue = await openDeliveryQueue({ databaseUrl: inject('databaseUrl'), settings: { attemptTimeoutSeconds: 5, pollIntervalSeconds: 1, historyRetentionSeconds: 86_400 }, role: 'sender', applicationName: 'console-webhooks-test' });
  detach = attachDeliveryQueue(queue);
  receiver = createServer((_req, res) => res.writeHead(204).end());
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});
afterAll(async () => {
  detach?.();
  await queue?.boss.stop({ graceful: false });
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  await connection.close();
});

function callerFor(key: string, webhooks: RequestContext['webhooks'] = { destination, attemptTimeoutMs: 5_000 }) {
  const ctx: RequestContext = {
    door: 'console',
    spendRateLimit: async () => undefined,
    db,
    sql: client,
    requestId: 'req_test',
    authorization: `Bearer ${key}`,
    headers: {},
    protector,
    audit: new ReadAuditWriter(client),
    webhooks,
    writeGate: new StreamWriteGate({ concurrency: 2 }),
    identified: {},
    response: { headers: {} },
  };
  return createCallerFactory(partnerRouter)(ctx).console.webhooks;
}

const keyFor = async (order: OrderRow, environment: Environment = 'sandbox') => (await createKey(db, { clientId: order.clientId, environment, scopes: [...SCOPES] })).key;

/** A delivery row in a given state, as the worker would have left it. */
async function deliveryOf(subscriptionId: string, eventId: string | null, values: Partial<typeof webhookDeliveries.$inferInsert> = {}) {
  const [row] = await db
    .insert(webhookDeliveries)
    .values({ subscriptionId, eventId, kind: eventId ? 'event' : 'test', state: 'dead_lettered', attemptsMade: 1, lastStatusCode: 500, ...values })
    .returning();
  return row;
}

const eventData = (order: OrderRow): EventDraft['data'] => ({
  order_id: order.id,
  external_order_id: 'recover',
  program_id: order.programId,
  client_id: order.clientId,
  environment: 'sandbox',
  lifecycle: 'active',
});

/** Three events of a fresh order's stream (ids), for dead letters to point at. */
async function threeEvents(): Promise<string[]> {
  const { order } = await newOrder(db);
  const drafts: EventDraft[] = Array.from({ length: 3 }, () => ({ type: 'order.updated', occurredAt: new Date(), data: eventData(order) }));
  const appended = await db.transaction((tx) => appendEvents(tx, { clientId: order.clientId, environment: 'sandbox' }, drafts));
  return appended.map((e) => e.event_id);
}

describe('sandbox webhook self-service (console)', () => {
  it('registers an endpoint under the destination guard and loopback rule, shows the secret once, and never again', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    for (const url of ['https://10.0.0.8/hooks', 'http://public.partner.example/hooks', 'https://localhost./hooks', 'http://127.0.0.1:3000/hooks']) {
      await expect(api.create({ url, event_types: ['order.created'] }), url).rejects.toMatchObject({ errorCode: 'invalid_request', details: [{ field: 'url', issue: 'refused_destination' }] });
    }
    // The loopback allowance is the process's, not the partner's to choose.
    const strict = callerFor(await keyFor(order), { destination: { allowLoopback: false, servicePorts: [] }, attemptTimeoutMs: 5_000 });
    await expect(strict.create({ url: receiverUrl, event_types: ['order.created'] })).rejects.toMatchObject({ details: [{ issue: 'refused_destination', message: expect.stringMatching(/run `lop listen --forward-to http:\/\/127\.0\.0\.1:\d+\/[^`]*` instead.*PARTNER_WEBHOOKS_ALLOW_LOOPBACK=true/) }] });

    const created = (await api.create({ url: receiverUrl, event_types: ['order.created', 'order.created', 'result.final'] })).data;
    expect(created).toMatchObject({ url: receiverUrl, event_types: ['order.created', 'result.final'], status: 'active', secret: expect.stringMatching(/^whsec_/) });
    const listed = (await api.list({})).data;
    expect(listed.map((e) => e.subscription_id)).toEqual([created.subscription_id]);
    expect(JSON.stringify(listed)).not.toContain(created.secret);
    const [row] = await db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, created.subscription_id));
    expect(row.secretProtected).not.toContain(created.secret);

    const rotated = (await api.rotateSecret({ subscription_id: created.subscription_id })).data;
    expect(rotated.secret).not.toBe(created.secret);
    expect((await api.update({ subscription_id: created.subscription_id, event_types: ['order.updated'] })).data.event_types).toEqual(['order.updated']);
  });

  it('25 concurrent endpoint creations (one batch) create at most the cap of 10; the rest are refused with a clear conflict', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const calls = await Promise.allSettled(Array.from({ length: 25 }, (_, i) => api.create({ url: `${receiverUrl}/${i}`, event_types: ['order.created'] })));
    const created = calls.filter((c) => c.status === 'fulfilled');
    expect(created).toHaveLength(10);
    for (const call of calls) {
      if (call.status === 'rejected') expect(call.reason).toMatchObject({ errorCode: 'conflict', details: [{ issue: 'too_many_endpoints' }], message: expect.stringMatching(/at most 10/) });
    }
    const rows = await db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.clientId, order.clientId));
    expect(rows).toHaveLength(10);
    // Disabling one frees a place: the cap counts active endpoints.
    await api.disable({ subscription_id: rows[0].id });
    await expect(api.create({ url: `${receiverUrl}/again`, event_types: ['order.created'] })).resolves.toBeDefined();
    await expect(api.create({ url: `${receiverUrl}/over`, event_types: ['order.created'] })).rejects.toMatchObject({ details: [{ issue: 'too_many_endpoints' }] });
  });

  it('is sandbox only: the console door refuses production keys, and the domain refuses a production caller on its own', async () => {
    const { order } = await newOrder(db);
    await expect(callerFor(await keyFor(order, 'production')).list({})).rejects.toMatchObject({ errorCode: 'forbidden', details: [{ issue: 'production_key_on_console' }] });
    const production: Caller = { keyId: randomUUID(), clientId: order.clientId, laboratoryId: order.laboratoryId, environment: 'production', keyPrefix: 'lop_test_0000', scopes: new Set(SCOPES) };
    await expect(createWebhookEndpoint(db, protector, production, { url: 'https://hooks.partner.example/x', event_types: ['order.created'] }, { destination, attemptTimeoutMs: 5_000 })).rejects.toMatchObject({
      errorCode: 'forbidden',
      details: [{ issue: 'production_webhooks' }],
    });
    expect(await db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.clientId, order.clientId))).toEqual([]);
  });

  it('touches only the caller’s own endpoints and deliveries: another client’s are 404', async () => {
    const mine = await newOrder(db);
    const theirs = await newOrder(db);
    const theirApi = callerFor(await keyFor(theirs.order));
    const endpoint = (await theirApi.create({ url: receiverUrl, event_types: ['order.updated'] })).data;
    const dead = await deliveryOf(endpoint.subscription_id, null);
    const api = callerFor(await keyFor(mine.order));
    const id = { subscription_id: endpoint.subscription_id };
    for (const call of [
      () => api.update({ ...id, event_types: ['order.created'] }),
      () => api.rotateSecret(id),
      () => api.disable(id),
      () => api.sendTest(id),
      () => api.deliveries(id),
      () => api.recover({ ...id, since: new Date(0).toISOString() }),
      () => api.resend({ delivery_id: dead.id }),
      () => api.retryNow({ delivery_id: dead.id }),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: 'NOT_FOUND' });
    }
    expect((await api.list({})).data).toEqual([]);
  });

  it('sends a test event now and shows it in the delivery log with its request and the answer', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.updated'] })).data;
    const test = (await api.sendTest({ subscription_id: endpoint.subscription_id, event_type: 'result.final' })).data;
    expect(test).toMatchObject({ kind: 'test', state: 'delivered', event_id: null, attempts: [{ attempt: 1, response: { status: 204 }, request: { method: 'POST', url: receiverUrl } }] });
    const headers = test.attempts[0].request!.headers;
    expect(headers['x-partner-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
    // An event envelope of the type asked for, flagged as a test; its ids agree with its headers.
    const body = JSON.parse(test.attempts[0].request!.body!);
    expect(body).toMatchObject({ type: 'result.final', sequence: 0, data: { external_order_id: 'test-delivery', client_id: order.clientId } });
    expect(headers).toMatchObject({ 'x-partner-test': 'true', 'x-partner-event-id': body.event_id, 'x-partner-delivery-id': test.attempts[0].attempt_id });
    await expect(api.sendTest({ subscription_id: endpoint.subscription_id, event_type: 'order.shipped' as never })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    const log = (await api.deliveries({ subscription_id: endpoint.subscription_id })).data;
    expect(log.deliveries.map((d) => d.delivery_id)).toEqual([test.delivery_id]);
  });

  it('sendTest reports what the receiver answered, NUL bytes and invalid UTF-8 included, instead of refusing the call', async () => {
    const answer = Buffer.concat([Buffer.from('{"error":"'), Buffer.from([0, 0xff, 0xfe, 0]), Buffer.from('"}')]);
    const hostile = createServer((_req, res) => res.writeHead(400).end(answer));
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    try {
      const { order } = await newOrder(db);
      const api = callerFor(await keyFor(order));
      const endpoint = (await api.create({ url: `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/hooks`, event_types: ['order.updated'] })).data;
      const test = (await api.sendTest({ subscription_id: endpoint.subscription_id })).data;
      expect(test).toMatchObject({ kind: 'test', state: 'failed', attempts_made: 1, last_status_code: 400 });
      expect(test.attempts).toHaveLength(1);
      expect(test.attempts[0]).toMatchObject({ outcome: 'failed', error_class: 'http_status', response: { status: 400, body_excerpt: '{"error":"\u0000\ufffd\ufffd\u0000"}', truncated: false } });
      const [stored] = await db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, test.delivery_id));
      expect(stored.responseBody).toEqual(answer);
    } finally {
      await new Promise<void>((resolve) => hostile.close(() => resolve()));
    }
  });

  it('resends a finished delivery as a replay, retries a waiting one now, and refuses what cannot be done', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.updated'] })).data;
    await acceptOrder(db, { order_id: order.id });
    const [event] = await eventsOf(db, order);
    // The real delivery the outbox created for the event; make it a dead letter.
    await db.update(webhookDeliveries).set({ state: 'dead_lettered', attemptsMade: 7, failureReason: 'exhausted' }).where(eq(webhookDeliveries.subscriptionId, endpoint.subscription_id));
    const [dead] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, endpoint.subscription_id));
    expect(dead.eventId).toBe(event.id);

    const replay = (await api.resend({ delivery_id: dead.id })).data;
    expect(replay).toMatchObject({ kind: 'replay', replay_of: dead.id, state: 'pending', event_id: event.id, event_type: 'order.updated' });
    await expect(api.resend({ delivery_id: replay.delivery_id })).rejects.toMatchObject({ code: 'CONFLICT', details: [{ issue: 'delivery_pending' }] });
    await expect(api.retryNow({ delivery_id: replay.delivery_id })).rejects.toMatchObject({ code: 'CONFLICT', details: [{ issue: 'not_waiting_for_retry' }] });
    await expect(api.retryNow({ delivery_id: dead.id })).rejects.toMatchObject({ code: 'CONFLICT' });

    // A delivery waiting an hour for its second attempt: retry now moves it to now, with a job for attempt 2.
    const waiting = await deliveryOf(endpoint.subscription_id, event.id, { kind: 'replay', replayOf: dead.id, state: 'pending', attemptsMade: 1, nextAttemptAt: new Date(Date.now() + 3_600_000) });
    const retried = (await api.retryNow({ delivery_id: waiting.id })).data;
    expect(new Date(retried.next_attempt_at!).getTime()).toBeLessThan(Date.now() + 5_000);
    const jobs = await db.execute(sql`select data from pgboss.job where name = 'webhook-delivery-sandbox' and data->>'delivery_id' = ${waiting.id}`);
    expect((jobs as unknown as { data: unknown }[]).map((j) => j.data)).toEqual([{ delivery_id: waiting.id, attempt: 2 }]);

    // Its second attempt in flight: retry now would start a third beside it; refused.
    await db.insert(webhookDeliveryAttempts).values({ deliveryId: waiting.id, attemptNumber: 2, startedAt: new Date(), outcome: 'sending', inFlightUntil: new Date(Date.now() + 15_000) });
    await db.update(webhookDeliveries).set({ attemptsMade: 2 }).where(eq(webhookDeliveries.id, waiting.id));
    await expect(api.retryNow({ delivery_id: waiting.id })).rejects.toMatchObject({ code: 'CONFLICT', details: [{ issue: 'attempt_in_flight' }] });

    const test = await deliveryOf(endpoint.subscription_id, null, { state: 'failed' });
    await expect(api.resend({ delivery_id: test.id })).rejects.toMatchObject({ code: 'CONFLICT', details: [{ issue: 'test_delivery' }] });
  });

  it('recovers each dead-lettered event since a time once per call, never once per dead letter', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.created'] })).data;
    const [oldEvent, chainEvent, deliveredEvent] = await threeEvents();
    const since = new Date(Date.now() - 3_600_000);
    // Before `since`: not recovered.
    await deliveryOf(endpoint.subscription_id, oldEvent, { kind: 'replay', createdAt: new Date(Date.now() - 86_400_000) });
    // The original dead letter and its replay's own dead letter: one event, replayed once.
    const original = await deliveryOf(endpoint.subscription_id, chainEvent, { kind: 'replay' });
    const replayDead = await deliveryOf(endpoint.subscription_id, chainEvent, { kind: 'replay', replayOf: original.id });
    // Received after all: needs no replay.
    const dead = await deliveryOf(endpoint.subscription_id, deliveredEvent, { kind: 'replay' });
    await deliveryOf(endpoint.subscription_id, deliveredEvent, { kind: 'replay', replayOf: dead.id, state: 'delivered' });
    await deliveryOf(endpoint.subscription_id, null, { state: 'failed' });

    const recover = () => api.recover({ subscription_id: endpoint.subscription_id, since: since.toISOString() });
    const first = (await recover()).data;
    expect(first).toMatchObject({ replayed: 1, remaining: 0 });
    expect(first.deliveries.map((d) => [d.event_id, d.replay_of, d.state])).toEqual([[chainEvent, replayDead.id, 'pending']]);
    // Again while the replay is pending: nothing.
    expect((await recover()).data).toMatchObject({ replayed: 0, remaining: 0 });
    // The replay dead-letters too: left alone moments after its recover; once that has settled, the
    // next call replays the event once more, not once per dead letter.
    await db.update(webhookDeliveries).set({ state: 'dead_lettered' }).where(eq(webhookDeliveries.id, first.deliveries[0].delivery_id));
    expect((await recover()).data).toMatchObject({ replayed: 0, remaining: 0, recently_recovered: 1 });
    await settleRecovery(endpoint.subscription_id, chainEvent);
    const third = (await recover()).data;
    expect(third.deliveries.map((d) => [d.event_id, d.replay_of])).toEqual([[chainEvent, first.deliveries[0].delivery_id]]);

    const failing = (await api.deliveries({ subscription_id: endpoint.subscription_id, filter: 'failing' })).data.deliveries;
    expect(failing.every((d) => d.state === 'dead_lettered' || d.state === 'failed' || (d.state === 'pending' && d.attempts_made > 0))).toBe(true);
  });

  it('five concurrent recover calls (a batch, two tabs) produce one set of replays', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.created'] })).data;
    const events = await threeEvents();
    for (const event of events) await deliveryOf(endpoint.subscription_id, event, { kind: 'replay' });
    const calls = await Promise.allSettled(Array.from({ length: 5 }, () => api.recover({ subscription_id: endpoint.subscription_id, since: new Date(0).toISOString() })));
    const replayed = calls.flatMap((c) => (c.status === 'fulfilled' ? c.value.data.deliveries.map((d) => d.event_id) : []));
    expect(replayed.sort()).toEqual([...events].sort());
    for (const call of calls) if (call.status === 'rejected') expect(call.reason).toMatchObject({ code: 'CONFLICT', details: [{ issue: 'recovery_in_progress' }] });
    const replays = await db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.subscriptionId, endpoint.subscription_id), eq(webhookDeliveries.state, 'pending')));
    expect(replays).toHaveLength(3);
  });

  it('resend is idempotent while a delivery of the event is pending: five at once make one replay', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.created'] })).data;
    const [event] = await threeEvents();
    const dead = await deliveryOf(endpoint.subscription_id, event, { kind: 'replay' });
    const calls = await Promise.allSettled(Array.from({ length: 5 }, () => api.resend({ delivery_id: dead.id })));
    expect(calls.filter((c) => c.status === 'fulfilled')).toHaveLength(1);
    for (const c of calls) {
      if (c.status === 'rejected') expect(c.reason).toMatchObject({ code: 'CONFLICT', details: [{ issue: expect.stringMatching(/^(replay_pending|recovery_in_progress)$/) }] });
    }
    await expect(api.resend({ delivery_id: dead.id })).rejects.toMatchObject({ code: 'CONFLICT', details: [{ issue: 'replay_pending' }] });
    // Recover skips the event for the same reason.
    expect((await api.recover({ subscription_id: endpoint.subscription_id, since: new Date(0).toISOString() })).data).toMatchObject({ replayed: 0, remaining: 0 });
    const pending = await db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.subscriptionId, endpoint.subscription_id), eq(webhookDeliveries.state, 'pending')));
    expect(pending).toHaveLength(1);
  });

  it('replays at most 1,000 events per call and says how many remain', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.created'] })).data;
    const stream = { clientId: order.clientId, environment: 'sandbox' as const };
    const drafts: EventDraft[] = Array.from({ length: 1_001 }, () => ({ type: 'order.updated', occurredAt: new Date(), data: eventData(order) }));
    const appended = await db.transaction((tx) => appendEvents(tx, stream, drafts));
    await client`
      insert into webhook_deliveries (subscription_id, event_id, kind, state, attempts_made)
      select ${endpoint.subscription_id}, unnest(${appended.map((e) => e.event_id)}::uuid[]), 'replay', 'dead_lettered', 7`;
    const recover = () => api.recover({ subscription_id: endpoint.subscription_id, since: new Date(0).toISOString() });
    expect((await recover()).data).toMatchObject({ replayed: 1_000, remaining: 1 });
    expect((await recover()).data).toMatchObject({ replayed: 1, remaining: 0 });
  });

  it('disables an endpoint: pending deliveries cancelled, no test event sent to it', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.updated'] })).data;
    await acceptOrder(db, { order_id: order.id });
    const disabled = (await api.disable({ subscription_id: endpoint.subscription_id })).data;
    expect(disabled.status).toBe('disabled');
    const states = await db.select({ state: webhookDeliveries.state }).from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, endpoint.subscription_id));
    expect(states).toEqual([{ state: 'cancelled' }]);
    await expect(api.sendTest({ subscription_id: endpoint.subscription_id })).rejects.toMatchObject({ code: 'CONFLICT', details: [{ issue: 'endpoint_disabled' }] });
    expect(await db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, randomUUID()))).toEqual([]);
  });

  it('says why an event has no delivery: it came before the endpoint existed', async () => {
    const { order } = await newOrder(db);
    const key = await keyFor(order);
    await acceptOrder(db, { order_id: order.id });
    const [before] = await eventsOf(db, order);
    const api = callerFor(key);
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.updated'] })).data;
    const view = (await createCallerFactory(partnerRouter)({ ...({} as RequestContext), door: 'console', spendRateLimit: async () => undefined, db, sql: client, requestId: 'r', authorization: `Bearer ${key}`, headers: {}, protector, identified: {}, response: { headers: {} } }).console.eventDeliveries({ event_ids: [before.id] })).data;
    expect(view.undelivered).toEqual([{ event_id: before.id, reason: 'before_subscription', subscribed_since: endpoint.created_at }]);
  });

  it('answers with the fields its schemas document: the shared delivery view’s resolved address and replay requester stay with the administrators', async () => {
    const { order } = await newOrder(db);
    const key = await keyFor(order);
    const api = callerFor(key);
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.updated'] })).data;
    const test = (await api.sendTest({ subscription_id: endpoint.subscription_id })).data;
    expect(Object.keys(test).sort()).toEqual(Object.keys(consoleWebhookDeliverySchema.shape).sort());
    expect(Object.keys(test.attempts[0]).sort()).toEqual(Object.keys(consoleWebhookAttemptSchema.shape).sort());

    await acceptOrder(db, { order_id: order.id });
    const eventIds = (await eventsOf(db, order)).map((e) => e.id);
    const delivery = await deliveryOf(endpoint.subscription_id, eventIds.at(-1)!, { kind: 'replay', requestedBy: 'an operator', state: 'delivered', attemptsMade: 1, completedAt: new Date() });
    await db.insert(webhookDeliveryAttempts).values({ deliveryId: delivery.id, attemptNumber: 1, startedAt: new Date(), outcome: 'delivered', statusCode: 204, destinationAddress: '127.0.0.1' });
    const view = (await createCallerFactory(partnerRouter)({ ...({} as RequestContext), door: 'console', spendRateLimit: async () => undefined, db, sql: client, requestId: 'r', authorization: `Bearer ${key}`, headers: {}, protector, identified: {}, response: { headers: {} } }).console.eventDeliveries({ event_ids: eventIds })).data;
    const shown = view.deliveries.find((d) => d.delivery_id === delivery.id)!;
    expect(Object.keys(shown).sort()).toEqual(Object.keys(consoleDeliverySchema.shape).sort());
    expect(shown.attempts).toEqual([expect.objectContaining({ attempt: 1, status_code: 204, outcome: 'delivered' })]);
    expect(Object.keys(shown.attempts[0]).sort()).toEqual(Object.keys(consoleDeliveryAttemptSchema.shape).sort());
  });
});

/**
 * As if RECOVER_SETTLE_SECONDS had passed since the event was last recovered on the endpoint: its
 * deliveries' times moved back together (a replay's created_at is the recovered_at of the dead
 * letters it took over, the link recoveriesOf follows).
 */
async function settleRecovery(subscriptionId: string, eventId: string) {
  const back = (column: typeof webhookDeliveries.recoveredAt | typeof webhookDeliveries.createdAt) => sql`${column} - make_interval(secs => ${RECOVER_SETTLE_SECONDS + 1})`;
  await db
    .update(webhookDeliveries)
    .set({ recoveredAt: back(webhookDeliveries.recoveredAt), createdAt: back(webhookDeliveries.createdAt) })
    .where(and(eq(webhookDeliveries.subscriptionId, subscriptionId), eq(webhookDeliveries.eventId, eventId)));
}

describe('recover and the dead letters it recovers (console)', () => {
  it('five calls a few hundred ms apart while the replays are pending make one set; each dead letter names its replay and the count leaves it', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.created'] })).data;
    const events = await threeEvents();
    const dead = [];
    for (const event of events) dead.push(await deliveryOf(endpoint.subscription_id, event, { kind: 'replay', failureReason: 'permanent', lastStatusCode: 410 }));
    // A second dead letter of the first event (an earlier replay that died too): one replay for both.
    const older = await deliveryOf(endpoint.subscription_id, events[0], { kind: 'replay', failureReason: 'permanent', lastStatusCode: 410, createdAt: new Date(Date.now() - 60_000) });
    const counts = async () => (await api.list({})).data.find((e) => e.subscription_id === endpoint.subscription_id)!.deliveries;
    expect(await counts()).toMatchObject({ dead_lettered: 4, recovered: 0 });

    const recover = () => api.recover({ subscription_id: endpoint.subscription_id, since: new Date(0).toISOString() });
    const replayed: string[] = [];
    for (let call = 0; call < 5; call++) {
      if (call > 0) await new Promise((resolve) => setTimeout(resolve, 300));
      replayed.push(...(await recover()).data.deliveries.map((d) => d.event_id!));
    }
    expect(replayed.sort()).toEqual([...events].sort());
    const replays = await db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.subscriptionId, endpoint.subscription_id), eq(webhookDeliveries.state, 'pending')));
    expect(replays).toHaveLength(3);
    expect(await counts()).toMatchObject({ dead_lettered: 0, recovered: 4 });

    const log = (await api.deliveries({ subscription_id: endpoint.subscription_id, filter: 'dead_lettered' })).data.deliveries;
    for (const letter of [...dead, older]) {
      const shown = log.find((d) => d.delivery_id === letter.id)!;
      const replay = replays.find((r) => r.eventId === letter.eventId)!;
      expect(shown).toMatchObject({ recovered_by: replay.id, recovered_at: expect.any(String) });
    }
    // Recovered dead letters need nothing more: not "failing".
    expect((await api.deliveries({ subscription_id: endpoint.subscription_id, filter: 'failing' })).data.deliveries).toEqual([]);
    // One delivery of the log by its id (the health view links to it).
    expect((await api.deliveries({ subscription_id: endpoint.subscription_id, delivery_id: older.id })).data.deliveries.map((d) => d.delivery_id)).toEqual([older.id]);

    // A replay that died at once (an endpoint answering 410) is a dead letter of its own, not
    // recovered; a call moments after the recover leaves its event alone (a double click, a script)...
    await db.update(webhookDeliveries).set({ state: 'dead_lettered', failureReason: 'permanent' }).where(eq(webhookDeliveries.id, replays[0].id));
    expect(await counts()).toMatchObject({ dead_lettered: 1, recovered: 4 });
    expect((await recover()).data).toMatchObject({ replayed: 0, remaining: 0, recently_recovered: 1 });
    // ...and once RECOVER_SETTLE_SECONDS have passed since that recover, the next call replays it once more.
    await settleRecovery(endpoint.subscription_id, replays[0].eventId!);
    expect((await recover()).data.deliveries.map((d) => [d.event_id, d.replay_of])).toEqual([[replays[0].eventId, replays[0].id]]);
    expect((await recover()).data).toMatchObject({ replayed: 0, recently_recovered: 0 });
  });

  it('a resend of a dead letter recovers it too: linked to the resend, counted as recovered, not taken by recover', async () => {
    const { order } = await newOrder(db);
    const api = callerFor(await keyFor(order));
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.created'] })).data;
    const [event] = await threeEvents();
    const dead = await deliveryOf(endpoint.subscription_id, event, { kind: 'replay', failureReason: 'exhausted' });
    const resent = (await api.resend({ delivery_id: dead.id })).data;
    const shown = (await api.deliveries({ subscription_id: endpoint.subscription_id, delivery_id: dead.id })).data.deliveries[0];
    expect(shown).toMatchObject({ recovered_by: resent.delivery_id, replayed_by: [resent.delivery_id] });
    expect((await api.list({})).data.find((e) => e.subscription_id === endpoint.subscription_id)!.deliveries).toMatchObject({ dead_lettered: 0, recovered: 1 });
    await db.update(webhookDeliveries).set({ state: 'delivered' }).where(eq(webhookDeliveries.id, resent.delivery_id));
    expect((await api.recover({ subscription_id: endpoint.subscription_id, since: new Date(0).toISOString() })).data).toMatchObject({ replayed: 0 });
  });
});

describe('an endpoint’s health over the last 24 hours (console)', () => {
  const HOUR = 3_600_000;

  /** A delivery of the endpoint with these attempts (outcome, duration) started at the given times. */
  async function attemptsAt(subscriptionId: string, eventId: string, attempts: { at: Date; outcome: 'delivered' | 'retry' | 'dead_lettered' | 'sending'; ms?: number; status?: number }[]) {
    const delivery = await deliveryOf(subscriptionId, eventId, { kind: 'replay', state: 'pending', attemptsMade: attempts.length });
    await db.insert(webhookDeliveryAttempts).values(
      attempts.map((a, i) => ({ deliveryId: delivery.id, attemptNumber: i + 1, startedAt: a.at, outcome: a.outcome, durationMs: a.outcome === 'sending' ? null : (a.ms ?? 10), statusCode: a.status ?? (a.outcome === 'delivered' ? 204 : a.outcome === 'sending' ? null : 500) })),
    );
    return delivery;
  }

  it('gives each of the 24 hours its attempts, success rate and p50/p95 latency; only this endpoint’s, only inside the window', async () => {
    const { order } = await newOrder(db);
    const key = await keyFor(order);
    const api = callerFor(key);
    const caller = await authenticate(client, `Bearer ${key}`);
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.created'] })).data;
    const other = (await api.create({ url: `${receiverUrl}/other`, event_types: ['order.created'] })).data;
    const [event] = await threeEvents();
    const now = Date.now();
    const { from } = healthWindow(now);
    const hour = (i: number, plusMs = 0) => new Date(from.getTime() + i * HOUR + plusMs);
    const late = await attemptsAt(endpoint.subscription_id, event, [100, 200, 300, 400].map((ms, i) => ({ at: hour(22, i * 1000), outcome: 'delivered' as const, ms })));
    await attemptsAt(endpoint.subscription_id, event, [{ at: hour(22, 60_000), outcome: 'retry', ms: 1000, status: 503 }]);
    // The window's first instant counts; the one before it does not.
    await attemptsAt(endpoint.subscription_id, event, [{ at: hour(0), outcome: 'dead_lettered', ms: 50, status: 410 }]);
    await attemptsAt(endpoint.subscription_id, event, [{ at: hour(0, -1), outcome: 'delivered', ms: 5 }]);
    await attemptsAt(endpoint.subscription_id, event, [{ at: new Date(now - 1000), outcome: 'sending' }]);
    // Another endpoint's attempt in the same hour.
    await attemptsAt(other.subscription_id, event, [{ at: hour(22, 5000), outcome: 'retry', ms: 9000 }]);

    const health = await getWebhookEndpointHealth(db, caller, endpoint.subscription_id, now);
    expect(health.buckets).toHaveLength(24);
    expect(health.buckets[0]).toMatchObject({ start: hour(0).toISOString(), end: hour(1).toISOString(), attempts: 1, succeeded: 0, failed: 1, success_rate: 0, latency_p50_ms: 50 });
    expect(health.buckets[22]).toEqual({
      start: hour(22).toISOString(),
      end: hour(23).toISOString(),
      attempts: 5,
      succeeded: 4,
      failed: 1,
      in_flight: 0,
      success_rate: 0.8,
      latency_p50_ms: 300,
      latency_p95_ms: 1000,
    });
    expect(health.buckets[23]).toMatchObject({ attempts: 1, in_flight: 1, success_rate: null, latency_p50_ms: null });
    expect(health.buckets.filter((b, i) => ![0, 22, 23].includes(i)).every((b) => b.attempts === 0 && b.success_rate === null)).toBe(true);
    expect(health.totals).toMatchObject({ attempts: 7, succeeded: 4, failed: 2, in_flight: 1, success_rate: 4 / 6 });

    // The tenancy is the query's own too: another client asking about this endpoint's id gets nothing.
    const stranger = await authenticate(client, `Bearer ${await keyFor((await newOrder(db)).order)}`);
    expect((await attemptBuckets(db, stranger, endpoint.subscription_id, healthWindow(now))).total.attempts).toBe(0);
    await expect(callerFor(await keyFor((await newOrder(db)).order)).health({ subscription_id: endpoint.subscription_id })).rejects.toMatchObject({ code: 'NOT_FOUND' });

    // The attempts behind an hour, newest first, each naming its delivery.
    const behind = await listWebhookBucketAttempts(db, caller, endpoint.subscription_id, hour(22), now);
    expect(behind.attempts.map((a) => [a.delivery_id, a.duration_ms])).toEqual([
      [expect.any(String), 1000],
      [late.id, 400],
      [late.id, 300],
      [late.id, 200],
      [late.id, 100],
    ]);
    expect(behind).toMatchObject({ bucket_start: hour(22).toISOString(), bucket_end: hour(23).toISOString(), truncated: false });
    const viaApi = (await api.health({ subscription_id: endpoint.subscription_id })).data;
    expect(viaApi.buckets).toHaveLength(24);
  });

  it('reads only the attempt partitions that can hold the window (the partition key bounds the query)', async () => {
    const { order } = await newOrder(db);
    const key = await keyFor(order);
    const caller = await authenticate(client, `Bearer ${key}`);
    const endpoint = (await callerFor(key).create({ url: receiverUrl, event_types: ['order.created'] })).data;
    const window = healthWindow(Date.now());
    const plan = (await client`explain ${attemptBucketsStatement(client, caller, endpoint.subscription_id, window)}`).map((row) => String(row['QUERY PLAN'])).join('\n');
    const partitions = await listPartitions(client, 'webhook_delivery_attempts');
    expect(partitions.length).toBeGreaterThan(1);
    for (const p of partitions) {
      const overlaps = !p.isDefault && (p.from === null || p.from < window.to) && (p.to === null || p.to > window.from);
      expect(plan.includes(`${p.name} `) || plan.includes(`${p.name}\n`), `${p.name} scanned`).toBe(overlaps);
    }
  });

  it('lists the attempts behind an hour of the last 24 only (boundaries), at most 100', async () => {
    const { order } = await newOrder(db);
    const key = await keyFor(order);
    const api = callerFor(key);
    const caller = await authenticate(client, `Bearer ${key}`);
    const endpoint = (await api.create({ url: receiverUrl, event_types: ['order.created'] })).data;
    const [event] = await threeEvents();
    const now = Date.now();
    const { from, to } = healthWindow(now);
    const list = (start: Date) => listWebhookBucketAttempts(db, caller, endpoint.subscription_id, start, now);
    await expect(list(from)).resolves.toMatchObject({ attempts: [] });
    await expect(list(new Date(from.getTime() - HOUR))).rejects.toMatchObject({ errorCode: 'invalid_request', details: [{ field: 'bucket_start', issue: 'outside_window' }] });
    await expect(list(new Date(to.getTime() - HOUR))).resolves.toMatchObject({ attempts: [] });
    await expect(list(to)).rejects.toMatchObject({ errorCode: 'invalid_request', details: [{ field: 'bucket_start', issue: 'outside_window' }] });
    await expect(list(new Date(from.getTime() + 1))).rejects.toMatchObject({ errorCode: 'invalid_request', details: [{ field: 'bucket_start', issue: 'not_an_hour' }] });
    await expect(api.bucketAttempts({ subscription_id: endpoint.subscription_id, bucket_start: new Date(from.getTime() - HOUR).toISOString() })).rejects.toMatchObject({ code: 'BAD_REQUEST', errorCode: 'invalid_request' });

    const at = (i: number) => ({ at: new Date(from.getTime() + HOUR + i * 1000), outcome: 'delivered' as const });
    await attemptsAt(endpoint.subscription_id, event, Array.from({ length: BUCKET_ATTEMPTS_MAX }, (_, i) => at(i)));
    const full = await list(new Date(from.getTime() + HOUR));
    expect(full.attempts).toHaveLength(BUCKET_ATTEMPTS_MAX);
    expect(full.truncated).toBe(false);
    await attemptsAt(endpoint.subscription_id, event, [at(BUCKET_ATTEMPTS_MAX)]);
    const over = await list(new Date(from.getTime() + HOUR));
    expect(over.attempts).toHaveLength(BUCKET_ATTEMPTS_MAX);
    expect(over.truncated).toBe(true);
    expect(over.attempts[0].started_at).toBe(at(BUCKET_ATTEMPTS_MAX).at.toISOString());
  });
});
