import { randomUUID } from 'node:crypto';
import { and, eq, sql as raw } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { webhookDeliveries } from '@lop/db';
import { appendEvents, createKey, createSubscription, disableSubscription, EVENT_TYPES, SCOPES, type EventDraft } from '@lop/domain';
import { eventually, newPartner, type Partner, subscribe, testProtector, workerConfig } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

/**
 * Fair delivery: one client's large, slow backlog holds at most PARTNER_WEBHOOK_CLIENT_CONCURRENCY
 * attempts, so another client's first attempt is fetched past it; and production has its own
 * queue and workers, so it never waits behind sandbox. Asserted as ordering (delivered while the
 * backlog is still pending), not as a timing figure.
 */

const SLOW_MS = 1_500;
const CLIENT_CONCURRENCY = 4;
const subscriptions: string[] = [];

const rig = useDeliveryRig('fairness', {
  poolMax: 6,
  reply: (request) => ({ status: 200, delayMs: request.path.startsWith('/slow') ? SLOW_MS : 0 }),
  worker: () => ({
    // 16 attempts in flight per environment, at most 4 of them one client's.
    config: workerConfig({ PARTNER_WEBHOOK_CONCURRENCY: '16', PARTNER_WEBHOOK_CLIENT_CONCURRENCY: String(CLIENT_CONCURRENCY), PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '5' }),
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

describe('fair delivery', () => {
  it('another client’s first attempt is delivered while one client’s large slow backlog is still pending', async () => {
    const noisy = await newPartner(database.db, database.sql);
    const backlog = await backlogOf(noisy, `/slow/${noisy.clientId}`, 300);
    await rig.receiver.waitFor((all) => all.some((r) => r.path === `/slow/${noisy.clientId}`), 15_000, 'the backlog to start');

    const quiet = await newPartner(database.db, database.sql);
    const path = `/quiet/${quiet.clientId}`;
    const subscription = await subscribe(database.db, quiet, rig.receiver.url(path), ['order.updated']);
    subscriptions.push(subscription.subscription_id);
    await database.db.transaction((tx) => appendEvents(tx, { clientId: quiet.clientId, environment: 'sandbox' }, drafts(quiet, 1)));
    await rig.receiver.waitFor((all) => all.some((r) => r.path === path), 15_000, 'the quiet client’s delivery');

    // FIFO over 16 slots would have drained most of the 300 first; the noisy client never had more than its 4.
    const slowSeen = rig.receiver.requests.filter((r) => r.path === `/slow/${noisy.clientId}`).length;
    expect(slowSeen).toBeLessThan(50);
    expect(await pendingOf(backlog)).toBeGreaterThan(250);
    // A slot starts its next attempt only after the last one's answer (SLOW_MS later), so no window
    // shorter than SLOW_MS holds more arrivals than the noisy client had attempts in flight.
    const arrivals = rig.receiver.requests.filter((r) => r.path === `/slow/${noisy.clientId}`).map((r) => r.receivedAt);
    const inFlight = Math.max(...arrivals.map((t) => arrivals.filter((u) => u >= t && u < t + SLOW_MS - 100).length));
    expect(inFlight).toBeLessThanOrEqual(CLIENT_CONCURRENCY);
  }, 60_000);

  it('production is never behind sandbox: with every sandbox slot held by slow backlogs, a production delivery is attempted at once', async () => {
    // Five sandbox clients × 4 slow attempts each: more than the 16 sandbox slots.
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
