import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import {
  connectDatabase,
  createTestDatabase,
  events,
  idempotencyKeys,
  rateLimitCounters,
  sandboxRequestLog,
  webhookDeliveries,
  webhookDeliveryAttempts,
  webhookSubscriptions,
  withDatabase,
  type DatabaseConnection,
  type TestDatabase,
} from '@lop/db';
import { loadConfig } from '../config/config';
import { seedDemoTenant } from '../control-plane/demo-seed';
import { ensureRetentionPartitions } from './partitioned-tables';
import { pruneExpiredRows, retentionSettings, type RetentionSettings } from './retention';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

// A database of its own: moving the clock forward by a month prunes every finished delivery in
// it, which must not reach rows other test files in this run are looking at.
let testDatabase: TestDatabase;
let database: DatabaseConnection;
let clientId: string;
let laboratoryId: string;
let subscriptionId: string;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const settings: RetentionSettings = retentionSettings(loadConfig({ PARTNER_IDEMPOTENCY_KEY_RETENTION_HOURS: '24', PARTNER_WEBHOOK_RETENTION_DAYS: '30' }));
const later = (ms: number) => new Date(Date.now() + ms);

beforeAll(async () => {
  testDatabase = await createTestDatabase(withDatabase(inject('databaseUrl'), 'postgres'), 'retention');
  database = connectDatabase(testDatabase.url, { max: 2, applicationName: 'retention-test' });
  const tenant = await seedDemoTenant(database.db);
  clientId = tenant.client_id;
  laboratoryId = tenant.laboratory_id;
  const [subscription] = await database.db
    .insert(webhookSubscriptions)
    .values({ laboratoryId: tenant.laboratory_id, clientId, environment: 'sandbox', url: 'https://hooks.partner.example/x', eventTypes: ['order.created'], secretProtected: 'sealed' })
    .returning();
  subscriptionId = subscription.id;
});
afterAll(async () => {
  await database?.close();
  await testDatabase?.drop();
});

async function idempotencyKey() {
  const key = `retention-${randomUUID()}`;
  await database.db.insert(idempotencyKeys).values({ clientId, environment: 'sandbox', key, requestHash: 'h' });
  return key;
}
const keyExists = async (key: string) => (await database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key))).length === 1;

async function delivery(state: 'pending' | 'delivered' | 'dead_lettered' | 'cancelled', attempts: number, completedAt: Date | null) {
  const [row] = await database.db
    .insert(webhookDeliveries)
    .values({ subscriptionId, kind: 'test', state, attemptsMade: attempts, completedAt, createdAt: completedAt ?? new Date(Date.now() - 90 * DAY) })
    .returning();
  // Only a delivered or dead-lettered delivery ended on its last attempt; any other attempt asked for a retry.
  const lastOutcome = state === 'delivered' || state === 'dead_lettered' ? state : 'retry';
  for (let n = 1; n <= attempts; n++) {
    await database.db.insert(webhookDeliveryAttempts).values({ deliveryId: row.id, attemptNumber: n, startedAt: new Date(), durationMs: 3, outcome: n === attempts ? lastOutcome : 'retry' });
  }
  return row.id;
}
const attemptsOf = async (id: string) => (await database.db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, id))).length;
const deliveryExists = async (id: string) => (await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id))).length === 1;

describe('retention: nothing but the event stream grows without bound', () => {
  it('keeps an idempotency key for the whole window (24 hours at least) and removes it after', async () => {
    const key = await idempotencyKey();
    expect((await pruneExpiredRows(database.sql, settings, { now: later(24 * HOUR - 60_000) })).idempotency_keys).toBe(0);
    expect(await keyExists(key)).toBe(true);
    const pruned = await pruneExpiredRows(database.sql, settings, { now: later(24 * HOUR + 60_000) });
    expect(pruned.idempotency_keys).toBeGreaterThanOrEqual(1);
    expect(await keyExists(key)).toBe(false);
  });

  it('refuses a configured idempotency window shorter than the contract’s 24 hours', () => {
    expect(() => loadConfig({ PARTNER_IDEMPOTENCY_KEY_RETENTION_HOURS: '23.9' })).toThrow(/PARTNER_IDEMPOTENCY_KEY_RETENTION_HOURS: must be at least 24/);
    expect(retentionSettings(loadConfig({}))).toEqual({ idempotencyKeySeconds: 48 * 3600, rateLimitCounterSeconds: 3600, webhookHistorySeconds: 30 * 86_400, audit: { retentionMonths: 72, sealMarginSeconds: 600 } });
  });

  it('prunes rate-limit counters of windows that ended, and keeps the current window', async () => {
    const subject = `retention:${randomUUID()}`;
    const windowStart = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    await database.db.insert(rateLimitCounters).values([
      { subject, windowStart, count: 3 },
      { subject, windowStart: new Date(windowStart.getTime() - 2 * HOUR), count: 7 },
    ]);
    const pruned = await pruneExpiredRows(database.sql, settings);
    expect(pruned.rate_limit_counters).toBeGreaterThanOrEqual(1);
    const left = await database.db.select().from(rateLimitCounters).where(eq(rateLimitCounters.subject, subject));
    expect(left.map((r) => r.count)).toEqual([3]);
  });

  it('keeps finished deliveries and dead letters with their attempts for the configured days, then prunes them; a pending delivery stays', async () => {
    const delivered = await delivery('delivered', 2, new Date());
    const dead = await delivery('dead_lettered', 7, new Date());
    const cancelled = await delivery('cancelled', 0, new Date());
    const pending = await delivery('pending', 3, null);

    const early = await pruneExpiredRows(database.sql, settings, { now: later(30 * DAY - HOUR) });
    expect(early.webhook_deliveries).toBe(0);
    for (const id of [delivered, dead, cancelled, pending]) expect(await deliveryExists(id)).toBe(true);

    const pruned = await pruneExpiredRows(database.sql, settings, { now: later(30 * DAY + HOUR) });
    expect(pruned).toMatchObject({ webhook_deliveries: 3, webhook_delivery_attempts: 9 });
    for (const id of [delivered, dead, cancelled]) {
      expect(await deliveryExists(id)).toBe(false);
      expect(await attemptsOf(id)).toBe(0);
    }
    expect(await deliveryExists(pending)).toBe(true);
    expect(await attemptsOf(pending)).toBe(3);
  });

  it('works through a backlog larger than one batch in one pass', async () => {
    const ids = await Promise.all(Array.from({ length: 7 }, () => delivery('delivered', 1, new Date(Date.now() - 40 * DAY))));
    const pruned = await pruneExpiredRows(database.sql, settings, { batchSize: 2 });
    expect(pruned.webhook_deliveries).toBe(7);
    for (const id of ids) expect(await deliveryExists(id)).toBe(false);
  });

  it('keeps the sandbox request log for 7 days, then prunes it with its day (a day partition goes whole: up to a day later, never sooner)', async () => {
    // The passes above moved the clock a month ahead and dropped every day partition of the log
    // with it; the maintenance job makes today's again, as after a restart.
    await ensureRetentionPartitions(database.sql);
    const requestId = `req_retention_${randomUUID()}`;
    await database.db.insert(sandboxRequestLog).values({
      laboratoryId, clientId, environment: 'sandbox', requestId, occurredAt: new Date(), method: 'GET', route: '/v1/lab', status: 200, durationMs: 3, keyPrefix: 'lop_test_AbCd', door: 'rest',
    });
    const logged = async () => (await database.db.select().from(sandboxRequestLog).where(eq(sandboxRequestLog.requestId, requestId))).length;
    expect((await pruneExpiredRows(database.sql, settings, { now: later(7 * DAY - HOUR) })).sandbox_request_log).toBe(0);
    expect(await logged()).toBe(1);
    const pruned = await pruneExpiredRows(database.sql, settings, { now: later(8 * DAY + HOUR) });
    expect(pruned.sandbox_request_log).toBe(1);
    expect(await logged()).toBe(0);
  });

  it('never prunes the event stream (the reconciliation record)', async () => {
    await database.db.insert(events).values({ id: randomUUID(), clientId, environment: 'sandbox', sequence: 1, type: 'order.created', occurredAt: new Date(), data: {} });
    const before = (await database.db.select().from(events)).length;
    await pruneExpiredRows(database.sql, settings, { now: later(3650 * DAY) });
    expect((await database.db.select().from(events)).length).toBe(before);
  });
});
