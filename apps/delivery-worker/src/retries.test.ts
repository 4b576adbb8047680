import { asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { webhookDeliveries, webhookDeliveryAttempts } from '@lop/db';
import { disableSubscription, listDeliveries, replayDelivery, rotateSubscriptionSecret, type Resolver } from '@lop/domain';
import { eventually, newPartner, type Partner, placeOrder, type ReceivedRequest, type Reply, subscribe, testProtector, verifyDelivery, workerConfig } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

/** The worker's clock: real time plus an offset a test may move. */
let clockOffsetMs = 0;
const clock = () => Date.now() + clockOffsetMs;
/** DNS as the worker sees it at delivery time. */
const deliveryDns: Resolver = async (name) => (name === 'rebind.partner.example' ? ['10.0.0.9'] : ['93.184.216.34']);

const ATTEMPT_TIMEOUT_MS = 500;
const RETRY_AFTER_CAP_SECONDS = 1.5;

/** Per-path scripts: the n-th request to a path gets the n-th reply (the last one repeats). */
const scripts = new Map<string, Reply[]>();
const seen = new Map<string, number>();

const rig = useDeliveryRig('delivery-retries', {
  reply: (request) => {
    const path = request.path;
    const n = seen.get(path) ?? 0;
    seen.set(path, n + 1);
    const script = scripts.get(path) ?? [{ status: 200 }];
    return script[Math.min(n, script.length - 1)];
  },
  worker: () => ({
    config: workerConfig({
      PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: String(ATTEMPT_TIMEOUT_MS / 1000),
      PARTNER_WEBHOOK_RETRY_AFTER_MAX_SECONDS: String(RETRY_AFTER_CAP_SECONDS),
    }),
    clock,
    resolve: deliveryDns,
  }),
});
const { database } = rig;

const requestsTo = (path: string) => rig.receiver.requests.filter((r) => r.path === path);

/** A partner subscribed at `path` with one order placed: one order.created delivery on its way. */
async function deliveryTo(path: string, script: Reply[], eventTypes: ['order.created'] | 'all' = ['order.created']) {
  scripts.set(path, script);
  const partner = await newPartner(database.db, database.sql);
  const subscription = await subscribe(database.db, partner, rig.receiver.url(path), eventTypes);
  const order = await placeOrder(database.db, partner);
  const [delivery] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
  return { partner, subscription, order, deliveryId: delivery.id };
}

async function settled(deliveryId: string, state: string) {
  return eventually(async () => {
    const [row] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId));
    expect(row.state).toBe(state);
    return row;
  }, 20_000);
}

const attemptsOf = (deliveryId: string) =>
  database.db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, deliveryId)).orderBy(asc(webhookDeliveryAttempts.attemptNumber));

describe('retries', () => {
  it('retries 500, 503, a timeout and 429 (honouring Retry-After), then delivers, all as one delivery', async () => {
    const path = '/retry-path';
    const { subscription, deliveryId } = await deliveryTo(path, [
      { status: 500 },
      { status: 503 },
      { status: 200, delayMs: ATTEMPT_TIMEOUT_MS * 3 },
      { status: 429, headers: { 'retry-after': '1' } },
      { status: 204 },
    ]);
    await settled(deliveryId, 'delivered');

    const attempts = await attemptsOf(deliveryId);
    expect(attempts.map((a) => [a.attemptNumber, a.statusCode, a.errorClass, a.outcome])).toEqual([
      [1, 500, 'http_status', 'retry'],
      [2, 503, 'http_status', 'retry'],
      [3, null, 'timeout', 'retry'],
      [4, 429, 'http_status', 'retry'],
      [5, 204, null, 'delivered'],
    ]);
    expect(attempts[2].durationMs).toBeGreaterThanOrEqual(ATTEMPT_TIMEOUT_MS - 20);
    expect(attempts[2].durationMs).toBeLessThan(ATTEMPT_TIMEOUT_MS * 3);
    expect(attempts[3].retryAfterSeconds).toBe(1);

    const requests = requestsTo(path);
    expect(requests).toHaveLength(5);
    // Retry-After: 1 pushed the fifth attempt at least a second after the fourth (the schedule says 0.05 s).
    expect(requests[4].receivedAt - requests[3].receivedAt).toBeGreaterThanOrEqual(950);
    // Each attempt carries its own delivery id (its attempt row), the same event and the same bytes.
    expect(requests.map((r) => r.headers['x-partner-delivery-id'])).toEqual(attempts.map((a) => a.id));
    for (const request of requests) {
      expect(request.rawBody).toBe(requests[0].rawBody);
      expect(verifyDelivery(subscription.secret, request)).toBe(true);
    }
  });

  it('caps Retry-After at the configured maximum, reading an HTTP date against the injected clock', async () => {
    const path = '/retry-after-cap';
    clockOffsetMs = 3 * 3600_000;
    try {
      // Two hours after the worker's (shifted) now: far beyond the 1.5-second cap of this test.
      const { deliveryId } = await deliveryTo(path, [{ status: 503, headers: { 'retry-after': new Date(clock() + 7200_000).toUTCString() } }, { status: 200 }]);
      await settled(deliveryId, 'delivered');
      const [first, second] = await attemptsOf(deliveryId);
      expect(first.retryAfterSeconds).toBeGreaterThan(7100);
      expect(first.nextAttemptAt!.getTime() - first.startedAt.getTime()).toBeGreaterThanOrEqual(RETRY_AFTER_CAP_SECONDS * 1000);
      expect(first.nextAttemptAt!.getTime() - first.startedAt.getTime()).toBeLessThan(RETRY_AFTER_CAP_SECONDS * 1000 + 1000);
      expect(second.outcome).toBe('delivered');
      const requests = requestsTo(path);
      expect(requests[1].receivedAt - requests[0].receivedAt).toBeGreaterThanOrEqual(RETRY_AFTER_CAP_SECONDS * 1000 - 50);
      // The signed timestamp comes from the injected clock too: three hours ahead, so a receiver
      // holding to the 300-second tolerance rejects it.
      expect(Number(requests[0].headers['x-partner-timestamp'])).toBeGreaterThan(Date.now() / 1000 + 3 * 3600 - 60);
      expect(first.startedAt.getTime()).toBeGreaterThan(Date.now() + 3 * 3600_000 - 60_000);
    } finally {
      clockOffsetMs = 0;
    }
  });

  it('does not retry a 400', async () => {
    const { deliveryId } = await deliveryTo('/bad-request', [{ status: 400 }]);
    const row = await settled(deliveryId, 'dead_lettered');
    expect(row).toMatchObject({ failureReason: 'permanent', attemptsMade: 1, lastStatusCode: 400, lastErrorClass: 'http_status' });
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(requestsTo('/bad-request')).toHaveLength(1);
  });

  it('does not follow a redirect and does not retry it', async () => {
    const { deliveryId } = await deliveryTo('/moved', [{ status: 302, headers: { location: rig.receiver.url('/redirect-target') } }]);
    const row = await settled(deliveryId, 'dead_lettered');
    expect(row).toMatchObject({ failureReason: 'permanent', attemptsMade: 1, lastStatusCode: 302, lastErrorClass: 'redirect' });
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(requestsTo('/moved')).toHaveLength(1);
    expect(requestsTo('/redirect-target')).toHaveLength(0);
  });

  it('dead-letters after 7 attempts; a replay delivers the same event under a new delivery id', async () => {
    const path = '/exhausted';
    const { deliveryId, subscription } = await deliveryTo(path, [{ status: 500 }]);
    const dead = await settled(deliveryId, 'dead_lettered');
    expect(dead).toMatchObject({ failureReason: 'exhausted', attemptsMade: 7, lastStatusCode: 500 });
    expect((await attemptsOf(deliveryId)).map((a) => a.outcome)).toEqual(['retry', 'retry', 'retry', 'retry', 'retry', 'retry', 'dead_lettered']);
    expect(requestsTo(path)).toHaveLength(7);
    const deadLetters = await listDeliveries(database.db, { subscriptionId: subscription.subscription_id, dead: true });
    expect(deadLetters.map((d) => d.delivery_id)).toEqual([deliveryId]);
    expect(deadLetters[0].attempts).toHaveLength(7);

    scripts.set(path, [{ status: 200 }]);
    seen.set(path, 0);
    const replay = await replayDelivery(database.db, rig.worker.queue, deliveryId, 'retries test');
    expect(replay).toMatchObject({ kind: 'replay', replay_of: deliveryId, requested_by: 'retries test', event_id: dead.eventId });
    expect(replay.delivery_id).not.toBe(deliveryId);
    await settled(replay.delivery_id, 'delivered');

    const [last] = requestsTo(path).slice(-1);
    const [replayAttempt] = await attemptsOf(replay.delivery_id);
    expect(last.headers['x-partner-delivery-id']).toBe(replayAttempt.id);
    expect(last.headers['x-partner-event-id']).toBe(dead.eventId);
    expect(last.rawBody).toBe(requestsTo(path)[0].rawBody);
    expect(verifyDelivery(subscription.secret, last)).toBe(true);
    // The original stays exactly as it was: the audit trail is two deliveries, not a rewritten one.
    expect(await settled(deliveryId, 'dead_lettered')).toMatchObject({ attemptsMade: 7 });
  });

  it('signs every attempt after a rotation with the new secret only', async () => {
    const path = '/rotation';
    const { subscription, partner, deliveryId } = await deliveryTo(path, [{ status: 503, headers: { 'retry-after': '2' } }, { status: 200 }], 'all');
    const [first] = await rig.receiver.waitFor(() => requestsTo(path).length >= 1).then(() => requestsTo(path));
    const rotated = await rotateSubscriptionSecret(database.db, testProtector(), subscription.subscription_id);
    expect(rotated.secret).not.toBe(subscription.secret);
    await settled(deliveryId, 'delivered');
    const later = await newEventDeliveredTo(partner, path, 3);

    const [, retried] = requestsTo(path);
    expect(verifyDelivery(subscription.secret, first)).toBe(true);
    for (const request of [retried, later]) {
      expect(verifyDelivery(rotated.secret, request)).toBe(true);
      expect(verifyDelivery(subscription.secret, request)).toBe(false);
    }
  });

  it('stops at once when the subscription is disabled: pending retries are cancelled, new events not delivered', async () => {
    const path = '/disabled';
    const { subscription, partner, deliveryId } = await deliveryTo(path, [{ status: 503, headers: { 'retry-after': '1' } }]);
    await rig.receiver.waitFor(() => requestsTo(path).length >= 1);
    const result = await disableSubscription(database.db, subscription.subscription_id);
    expect(result).toMatchObject({ status: 'disabled' });
    const row = await settled(deliveryId, 'cancelled');
    expect(row.failureReason).toBe('subscription_disabled');
    await placeOrder(database.db, partner);
    await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_CAP_SECONDS * 1000 + 700));
    expect(requestsTo(path)).toHaveLength(1);
    expect(await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id))).toHaveLength(1);
  });

  it('refuses a destination whose DNS answer turned private after registration, without connecting', async () => {
    const partner = await newPartner(database.db, database.sql);
    // At registration the name answers with a public address…
    const subscription = await subscribe(database.db, partner, 'https://rebind.partner.example/hooks', ['order.created'], async () => ['93.184.216.34']);
    await placeOrder(database.db, partner);
    const [delivery] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
    // …and at delivery time with a private one.
    const row = await settled(delivery.id, 'dead_lettered');
    expect(row).toMatchObject({ failureReason: 'permanent', lastErrorClass: 'blocked_destination', attemptsMade: 1, lastStatusCode: null });
    const [attempt] = await attemptsOf(delivery.id);
    expect(attempt).toMatchObject({ errorClass: 'blocked_destination', destinationAddress: null, statusCode: null });
  });
});

/** Places another order for the partner and waits for the n-th request at `path`. */
async function newEventDeliveredTo(partner: Partner, path: string, n: number): Promise<ReceivedRequest> {
  await placeOrder(database.db, partner);
  await rig.receiver.waitFor(() => requestsTo(path).length >= n, 15_000, `request ${n} at ${path}`);
  return requestsTo(path)[n - 1];
}
