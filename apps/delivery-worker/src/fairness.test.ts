import { randomUUID } from 'node:crypto';
import { EVENT_TYPES, SCOPES } from '@lop/contract';
import { and, eq, sql as raw } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { webhookDeliveries } from '@lop/db';
import { appendEvents, createKey, createSubscription, disableSubscription, type EventDraft } from '@lop/domain';
import { eventually, newPartner, type Partner, subscribe, testProtector, workerConfig } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

/**
 * Fair delivery, work-conserving: a client alone borrows the slots nobody else wants (all but a
 * reserve of PARTNER_WEBHOOK_CLIENT_CONCURRENCY), so another client's first attempt finds a slot
 * at once and is fetched past the backlog; while both wait, each has its cap before anyone
 * borrows. Production has its own queue and slots, so it never waits behind sandbox. Asserted as
 * ordering and counts of attempts in flight, not as timing figures.
 */

const SLOW_MS = 1_500;
const SLOTS = 16;
const CLIENT_CONCURRENCY = 4;
/** What a client alone may hold: every slot but the reserve kept for a newcomer. */
const ALONE = SLOTS - CLIENT_CONCURRENCY;
const subscriptions: string[] = [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const rig = useDeliveryRig('fairness', {
  poolMax: 6,
  reply: (request) => ({ status: 200, delayMs: request.path.startsWith('/slow') ? SLOW_MS : 0 }),
  worker: () => ({
    // 16 attempts in flight per environment; a client is entitled to 4 while others wait.
    config: workerConfig({ PARTNER_WEBHOOK_CONCURRENCY: String(SLOTS), PARTNER_WEBHOOK_CLIENT_CONCURRENCY: String(CLIENT_CONCURRENCY), PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '5' }),
    // The production endpoint's name answers with a private address at delivery time: its one
    // attempt is recorded at once as a blocked destination (no public receiver exists in a test).
    resolve: async (name) => (name === 'prod-hooks.partner.example' ? ['10.0.0.9'] : ['93.184.216.34']),
  }),
  // Whatever backlog is left is cancelled, so no later file's worker inherits it.
  beforeClose: async () => {
    for (const id of subscriptions) await disableSubscription(rig.database.db, id);
  },
});
const { database } = rig;

function drafts(partner: Partner, count: number, environment: 'sandbox' | 'production' = 'sandbox'): EventDraft[] {
  return Array.from({ length: count }, () => ({
    type: 'order.updated',
    occurredAt: new Date(),
    data: { order_id: randomUUID(), external_order_id: 'fair', program_id: partner.programId, client_id: partner.clientId, environment, lifecycle: 'active' },
  }));
}

async function backlogOf(partner: Partner, path: string, count: number) {
  const subscription = await subscribe(database.db, partner, rig.receiver.url(path), ['order.updated']);
  subscriptions.push(subscription.subscription_id);
  await database.db.transaction((tx) => appendEvents(tx, { clientId: partner.clientId, environment: 'sandbox' }, drafts(partner, count)));
  return subscription.subscription_id;
}

async function pendingOf(subscriptionId: string): Promise<number> {
  const [row] = (await database.db.execute(raw`select count(*)::int as n from webhook_deliveries where subscription_id = ${subscriptionId} and state = 'pending'`)) as unknown as { n: number }[];
  return row.n;
}

/**
 * The most attempts of a path in flight at once, from arrival times: a slot starts its next attempt
 * only after the last one's answer (SLOW_MS later), so no window shorter than SLOW_MS holds more
 * arrivals than there were attempts in flight.
 */
function peakInFlight(path: string, from = 0): number {
  const arrivals = rig.receiver.requests.filter((r) => r.path === path && r.receivedAt >= from).map((r) => r.receivedAt);
  return Math.max(0, ...arrivals.map((t) => arrivals.filter((u) => u >= t && u < t + SLOW_MS - 100).length));
}

describe('fair delivery', () => {
  it('a client alone uses more than its cap: every slot but the reserve', async () => {
    const alone = await newPartner(database.db, database.sql);
    const path = `/slow/${alone.clientId}`;
    const backlog = await backlogOf(alone, path, 60);
    // Two rounds of slow answers: the first round fills the slots it may have.
    await rig.receiver.waitFor((all) => all.filter((r) => r.path === path).length > ALONE, 15_000, 'a second round of the backlog');
    expect(peakInFlight(path)).toBeGreaterThan(CLIENT_CONCURRENCY);
    expect(peakInFlight(path)).toBeLessThanOrEqual(ALONE);
    await disableSubscription(database.db, backlog);
  }, 60_000);

  it('with two clients’ slow backlogs, the cap protects the second: its attempts start at once, as many as its cap', async () => {
    const first = await newPartner(database.db, database.sql);
    const firstPath = `/slow/${first.clientId}`;
    const firstBacklog = await backlogOf(first, firstPath, 300);
    await rig.receiver.waitFor((all) => all.filter((r) => r.path === firstPath).length >= ALONE, 15_000, 'the first backlog to borrow');

    const second = await newPartner(database.db, database.sql);
    const secondPath = `/slow/${second.clientId}`;
    const appendedAt = Date.now();
    const secondBacklog = await backlogOf(second, secondPath, 300);
    // Before any of the first client's borrowed attempts has ended: the reserve.
    await rig.receiver.waitFor((all) => all.filter((r) => r.path === secondPath).length >= CLIENT_CONCURRENCY, 15_000, 'the second client’s cap of attempts');
    const secondArrivals = rig.receiver.requests.filter((r) => r.path === secondPath).map((r) => r.receivedAt);
    expect(Math.max(...secondArrivals.slice(0, CLIENT_CONCURRENCY)) - appendedAt).toBeLessThan(SLOW_MS);
    // Three rounds later the second still has its cap in flight, the first never more than it may borrow.
    await sleep(3 * SLOW_MS);
    expect(peakInFlight(secondPath, appendedAt + SLOW_MS)).toBeGreaterThanOrEqual(CLIENT_CONCURRENCY);
    expect(peakInFlight(firstPath)).toBeLessThanOrEqual(ALONE);
    for (const id of [firstBacklog, secondBacklog]) await disableSubscription(database.db, id);
  }, 60_000);

  it('another client’s first attempt is delivered while one client’s large slow backlog is still pending', async () => {
    const noisy = await newPartner(database.db, database.sql);
    const backlog = await backlogOf(noisy, `/slow/${noisy.clientId}`, 300);
    await rig.receiver.waitFor((all) => all.some((r) => r.path === `/slow/${noisy.clientId}`), 15_000, 'the backlog to start');

    const quiet = await newPartner(database.db, database.sql);
    const path = `/quiet/${quiet.clientId}`;
    const subscription = await subscribe(database.db, quiet, rig.receiver.url(path), ['order.updated']);
    subscriptions.push(subscription.subscription_id);
    const appendedAt = Date.now();
    await database.db.transaction((tx) => appendEvents(tx, { clientId: quiet.clientId, environment: 'sandbox' }, drafts(quiet, 1)));
    await rig.receiver.waitFor((all) => all.some((r) => r.path === path), 15_000, 'the quiet client’s delivery');
    // A reserved slot, not one the backlog borrowed and holds for SLOW_MS.
    expect(rig.receiver.requests.find((r) => r.path === path)!.receivedAt - appendedAt).toBeLessThan(SLOW_MS);

    // FIFO over 16 slots would have drained most of the 300 first; the noisy client never had more than it may borrow.
    const slowSeen = rig.receiver.requests.filter((r) => r.path === `/slow/${noisy.clientId}`).length;
    expect(slowSeen).toBeLessThan(50);
    expect(await pendingOf(backlog)).toBeGreaterThan(250);
    expect(peakInFlight(`/slow/${noisy.clientId}`)).toBeLessThanOrEqual(ALONE);
  }, 60_000);

  it('production is never behind sandbox: with every sandbox slot held by slow backlogs, a production delivery is attempted at once', async () => {
    // Five sandbox clients × 4 slow attempts each: more than the 16 sandbox slots, borrowing or not.
    const noisy = await Promise.all(Array.from({ length: 5 }, () => newPartner(database.db, database.sql)));
    const backlogs = await Promise.all(noisy.map((partner) => backlogOf(partner, `/slow/${partner.clientId}`, 100)));
    await eventually(async () => {
      const [row] = (await database.db.execute(raw`select count(*)::int as n from pgboss.job where name = 'webhook-delivery-sandbox' and state = 'active'`)) as unknown as { n: number }[];
      expect(row.n).toBeGreaterThanOrEqual(16);
    }, 15_000);

    const partner = await newPartner(database.db, database.sql);
    await createKey(database.db, { clientId: partner.clientId, environment: 'production', scopes: [...SCOPES] });
    const production = await createSubscription(
      database.db,
      testProtector(),
      { clientId: partner.clientId, environment: 'production', url: 'https://prod-hooks.partner.example/hooks', eventTypes: [...EVENT_TYPES] },
      { allowLoopback: false, servicePorts: [], resolve: async () => ['93.184.216.34'] },
    );
    subscriptions.push(production.subscription_id);
    await database.db.transaction((tx) => appendEvents(tx, { clientId: partner.clientId, environment: 'production' }, drafts(partner, 1, 'production')));
    const attempted = await eventually(async () => {
      const [row] = await database.db
        .select()
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.subscriptionId, production.subscription_id), eq(webhookDeliveries.state, 'dead_lettered')));
      expect(row).toMatchObject({ attemptsMade: 1, lastErrorClass: 'blocked_destination' });
      return row;
    }, 15_000);
    expect(attempted.completedAt).not.toBeNull();
    // The sandbox backlogs are still there, their first attempts mostly not even made.
    const pending = (await Promise.all(backlogs.map(pendingOf))).reduce((a, b) => a + b, 0);
    expect(pending).toBeGreaterThan(400);
  }, 60_000);
});
