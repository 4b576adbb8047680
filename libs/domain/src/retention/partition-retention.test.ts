import { randomBytes, randomUUID } from 'node:crypto';
import { eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  connectDatabase,
  createTestDatabase,
  listPartitions,
  sandboxRequestLog,
  webhookDeliveries,
  webhookDeliveryAttempts,
  webhookSubscriptions,
  withDatabase,
  type DatabaseConnection,
  type PartitionInfo,
  type TestDatabase,
} from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { loadConfig } from '../config/config';
import { seedDemoTenant } from '../control-plane/demo-seed';
import { listRequestLog } from '../request-log/request-log';
import { DataProtector } from '../security/protector';
import { runMaintenancePass } from './maintenance-job';
import { ensureRetentionPartitions } from './partitioned-tables';
import { pruneFinishedDeliveries } from '../webhooks/delivery-store';
import { pruneExpiredRows, retentionSettings } from './retention';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

// A database of its own: the clock moves weeks ahead and whole partitions go.
let testDatabase: TestDatabase;
let database: DatabaseConnection;
let caller: Caller;
let subscriptionId: string;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
const settings = retentionSettings(loadConfig({ PARTNER_IDEMPOTENCY_KEY_RETENTION_HOURS: '24', PARTNER_WEBHOOK_RETENTION_DAYS: '30' }));
const at = (base: Date, ms: number) => new Date(base.getTime() + ms);

beforeAll(async () => {
  testDatabase = await createTestDatabase(withDatabase(inject('databaseUrl'), 'postgres'), 'partition-retention');
  database = connectDatabase(testDatabase.url, { max: 4, applicationName: 'partition-retention-test' });
  const tenant = await seedDemoTenant(database.db);
  caller = { keyId: 'k', keyPrefix: 'lop_test_AbCd', clientId: tenant.client_id, laboratoryId: tenant.laboratory_id, environment: 'sandbox', scopes: new Set() };
  const [subscription] = await database.db
    .insert(webhookSubscriptions)
    .values({ laboratoryId: tenant.laboratory_id, clientId: tenant.client_id, environment: 'sandbox', url: 'https://hooks.partner.example/x', eventTypes: ['order.created'], secretProtected: 'sealed' })
    .returning();
  subscriptionId = subscription.id;
});
afterAll(async () => {
  await database?.close();
  await testDatabase?.drop();
});

const ranged = (partitions: PartitionInfo[]) => partitions.filter((p) => p.from !== null && !p.isDefault);
const names = async (table: string) => (await listPartitions(database.sql, table)).map((p) => p.name);

async function delivery(createdAt: Date, completedAt: Date | null, attemptStarts: Date[]): Promise<string> {
  const [row] = await database.db
    .insert(webhookDeliveries)
    .values({ subscriptionId, kind: 'test', state: completedAt ? 'delivered' : 'pending', attemptsMade: attemptStarts.length, createdAt, completedAt })
    .returning();
  for (const [i, startedAt] of attemptStarts.entries()) {
    const last = i === attemptStarts.length - 1;
    await database.db.insert(webhookDeliveryAttempts).values({ deliveryId: row.id, attemptNumber: i + 1, startedAt, durationMs: 3, outcome: last && completedAt ? 'delivered' : 'retry' });
  }
  return row.id;
}
const deliveriesLeft = async (ids: string[]) => (await database.db.select().from(webhookDeliveries).where(inArray(webhookDeliveries.id, ids))).length;
const attemptsLeft = async (ids: string[]) => (await database.db.select().from(webhookDeliveryAttempts).where(inArray(webhookDeliveryAttempts.deliveryId, ids))).length;

describe('retention by partitions (issue 32): whole partitions past the window are dropped, never what is still kept', () => {
  it('the migration left the history tables partitioned: the table as it was FROM (MINVALUE), then weeks (days for the request log) ahead', async () => {
    for (const [table, days] of [
      ['webhook_deliveries', 7],
      ['webhook_delivery_attempts', 7],
      ['sandbox_request_log', 1],
    ] as const) {
      const partitions = await listPartitions(database.sql, table);
      expect(partitions[0]).toMatchObject({ name: `${table}_legacy`, from: null });
      const following = ranged(partitions);
      expect(following.length).toBeGreaterThanOrEqual(6);
      expect(following[0].from).toEqual(partitions[0].to);
      for (const p of following) expect(p.to!.getTime() - p.from!.getTime()).toBe(days * DAY);
      // The legacy partition's bound is at least a week ahead: the rows of the switch all fit in it.
      expect(partitions[0].to!.getTime()).toBeGreaterThan(Date.now() + 7 * DAY - HOUR);
    }
  });

  it("the previous release's retention statements run unchanged on the partitioned tables (DELETE … USING with FOR UPDATE SKIP LOCKED, DELETE by id)", async () => {
    // Rows of the legacy partition, as a month of history left them.
    const old = new Date(Date.now() - 40 * DAY);
    const finished = await delivery(old, at(old, HOUR), [old, at(old, 30 * 60_000)]);
    const pending = await delivery(old, null, [old]);
    // pruneFinishedDeliveries without a created_at bound is the previous release's statement, as it was.
    const batch = await pruneFinishedDeliveries(database.sql, new Date(Date.now() - 30 * DAY).toISOString(), 5_000);
    expect(batch).toEqual({ attempts: 2, deliveries: 1 });
    expect(await deliveriesLeft([finished, pending])).toBe(1);
    expect(await attemptsLeft([pending])).toBe(1);
    await database.db.insert(sandboxRequestLog).values({
      laboratoryId: caller.laboratoryId, clientId: caller.clientId, environment: 'sandbox', requestId: 'req_previous_release', occurredAt: at(old, 0),
      method: 'GET', route: '/v1/lab', status: 200, durationMs: 3, keyPrefix: 'lop_test_AbCd', door: 'rest',
    });
    const before = new Date(Date.now() - 7 * DAY).toISOString();
    const deleted = await database.sql`
      delete from sandbox_request_log where id = any(array(
        select id from sandbox_request_log where occurred_at < ${before}::timestamptz limit ${5_000}))`;
    expect(deleted.count).toBe(1);
  });

  it('the request log: a day wholly past 7 days goes whole, counted; the day the window ends in stays (a row lives up to a day longer, never shorter)', async () => {
    const days = ranged(await listPartitions(database.sql, 'sandbox_request_log'));
    const b = days[2].from!;
    const log = (occurredAt: Date) => ({
      laboratoryId: caller.laboratoryId, clientId: caller.clientId, environment: 'sandbox' as const, requestId: `req_${randomUUID()}`, occurredAt,
      method: 'GET', route: '/v1/lab', status: 200, durationMs: 3, keyPrefix: 'lop_test_AbCd', door: 'rest',
    });
    await database.db.insert(sandboxRequestLog).values([log(at(b, HOUR)), log(at(b, 2 * HOUR)), log(at(b, DAY + 10 * 60_000)), log(at(b, DAY + 5 * HOUR))]);
    const dropped: { table: string; partition: string; rows: number }[] = [];
    // The window starts at b + 1 day + 30 minutes: day b is wholly before it, day b+1 is not.
    const pruned = await pruneExpiredRows(database.sql, settings, { now: at(b, 8 * DAY + 30 * 60_000), onPartitionDropped: (d) => dropped.push(d) });
    expect(dropped).toContainEqual({ table: 'sandbox_request_log', partition: days[2].name, rows: 2 });
    expect(pruned.sandbox_request_log).toBe(2);
    const left = await database.db.select().from(sandboxRequestLog).where(eq(sandboxRequestLog.clientId, caller.clientId));
    // The row 10 minutes past the window is kept with its day.
    expect(left.map((r) => r.occurredAt.getTime()).sort()).toEqual([at(b, DAY + 10 * 60_000).getTime(), at(b, DAY + 5 * HOUR).getTime()]);
    expect(await names('sandbox_request_log')).not.toContain(days[2].name);
    expect(await names('sandbox_request_log')).toContain(days[3].name);
  });

  it('the request log reads across day partitions: a tail by cursor follows the ids (insertion order), whatever day each row is in', async () => {
    const days = ranged(await listPartitions(database.sql, 'sandbox_request_log'));
    const b = days[5].from!;
    const protector = new DataProtector(randomBytes(32));
    const entry = (occurredAt: Date, route: string) => ({
      laboratoryId: caller.laboratoryId, clientId: caller.clientId, environment: 'sandbox' as const, requestId: `req_${randomUUID()}`, occurredAt,
      method: 'GET', route, status: 200, durationMs: 3, keyPrefix: 'lop_test_AbCd', door: 'rest',
    });
    const now = at(b, 3 * DAY);
    const start = await listRequestLog(database.db, protector, caller, { limit: 10 }, now);
    // Written one by one, the days out of order: day 2, day 0, day 1, day 2.
    for (const [day, route] of [[2, '/a'], [0, '/b'], [1, '/c'], [2, '/d']] as const) await database.db.insert(sandboxRequestLog).values(entry(at(b, day * DAY + HOUR), route));
    const tailed: string[] = [];
    let cursor = start.next_cursor;
    for (let i = 0; i < 4; i++) {
      const page = await listRequestLog(database.db, protector, caller, { limit: 1, after: cursor }, now);
      tailed.push(...page.entries.map((e) => e.route));
      cursor = page.next_cursor;
    }
    expect(tailed).toEqual(['/a', '/b', '/c', '/d']);
    const latest = await listRequestLog(database.db, protector, caller, { limit: 3 }, now);
    expect(latest.entries.map((e) => e.route)).toEqual(['/b', '/c', '/d']);
    const tables = await database.sql<{ partition: string }[]>`select distinct tableoid::regclass::text as partition from sandbox_request_log where client_id = ${caller.clientId} and occurred_at >= ${b.toISOString()}::timestamptz`;
    expect(tables.length).toBe(3);
  });

  it('a week of deliveries whose every delivery finished before the window goes whole, its attempts first (and any that started the next week); a week holding a pending delivery stays with its attempts until it ends', async () => {
    const [first, second] = ranged(await listPartitions(database.sql, 'webhook_deliveries'));
    const b = first.from!;
    const done = await Promise.all([1, 2, 3].map((h) => delivery(at(b, h * HOUR), at(b, h * HOUR + 60_000), [at(b, h * HOUR)])));
    // Created in the first week's last hour, retried into the second, finished there.
    const straddling = await delivery(at(b, WEEK - HOUR), at(b, WEEK + HOUR), [at(b, WEEK - HOUR), at(b, WEEK + 30 * 60_000)]);
    const pending = await delivery(at(b, WEEK + DAY), null, [at(b, WEEK + DAY), at(b, WEEK + DAY + HOUR)]);
    const finishedBeside = await Promise.all([1, 2].map((h) => delivery(at(b, WEEK + DAY + h * HOUR), at(b, WEEK + DAY + h * HOUR + 60_000), [at(b, WEEK + DAY + h * HOUR)])));

    // The first week's window has not passed for its last delivery: nothing goes.
    const early = await pruneExpiredRows(database.sql, settings, { now: at(b, WEEK + 30 * DAY) });
    expect(early).toMatchObject({ webhook_deliveries: 0, webhook_delivery_attempts: 0 });
    expect(await names('webhook_deliveries')).toContain(first.name);

    const dropped: { table: string; partition: string; rows: number }[] = [];
    const pruned = await pruneExpiredRows(database.sql, settings, { now: at(b, WEEK + 30 * DAY + 2 * HOUR), onPartitionDropped: (d) => dropped.push(d) });
    expect(dropped).toEqual(
      expect.arrayContaining([
        { table: 'webhook_delivery_attempts', partition: first.name.replace('webhook_deliveries', 'webhook_delivery_attempts'), rows: 4 },
        { table: 'webhook_deliveries', partition: first.name, rows: 4 },
      ]),
    );
    // 4 deliveries; 4 attempts in the dropped week and the straddling delivery's second, deleted by row.
    expect(pruned).toMatchObject({ webhook_deliveries: 4, webhook_delivery_attempts: 5 });
    expect(await names('webhook_deliveries')).not.toContain(first.name);
    expect(await deliveriesLeft([...done, straddling])).toBe(0);
    expect(await attemptsLeft([...done, straddling])).toBe(0);
    expect(await deliveriesLeft([pending, ...finishedBeside])).toBe(3);

    // The second week is past the window but a pending delivery holds it: it stays, whole.
    await pruneExpiredRows(database.sql, settings, { now: at(b, 2 * WEEK + 30 * DAY + 2 * HOUR) });
    expect(await names('webhook_deliveries')).toContain(second.name);
    expect(await deliveriesLeft([pending, ...finishedBeside])).toBe(3);

    // A week later it is overdue: what is finished in it goes by row; the pending delivery and its attempts stay.
    const overdue = await pruneExpiredRows(database.sql, settings, { now: at(b, 3 * WEEK + 30 * DAY + 2 * HOUR) });
    expect(overdue).toMatchObject({ webhook_deliveries: 2, webhook_delivery_attempts: 2 });
    expect(await deliveriesLeft([pending])).toBe(1);
    expect(await attemptsLeft([pending])).toBe(2);
    expect(await names('webhook_deliveries')).toContain(second.name);

    // Once it ends and its window passes, the week goes whole.
    await database.db.update(webhookDeliveries).set({ state: 'dead_lettered', completedAt: at(b, WEEK + 2 * DAY) }).where(eq(webhookDeliveries.id, pending));
    const last = await pruneExpiredRows(database.sql, settings, { now: at(b, 3 * WEEK + 30 * DAY + 2 * HOUR) });
    expect(last).toMatchObject({ webhook_deliveries: 1, webhook_delivery_attempts: 2 });
    expect(await names('webhook_deliveries')).not.toContain(second.name);
    expect(await names('webhook_delivery_attempts')).not.toContain(second.name.replace('webhook_deliveries', 'webhook_delivery_attempts'));
  });

  it('the maintenance pass makes partitions ahead before it prunes, and counts a dropped partition in its result', async () => {
    const future = new Date(Math.floor(Date.now() / DAY) * DAY + 90 * DAY);
    await ensureRetentionPartitions(database.sql, at(future, -10 * DAY));
    const day = (await listPartitions(database.sql, 'sandbox_request_log')).find((p) => p.from?.getTime() === at(future, -9 * DAY).getTime())!;
    await database.db.insert(sandboxRequestLog).values(
      [1, 2, 3].map((m) => ({
        laboratoryId: caller.laboratoryId, clientId: caller.clientId, environment: 'sandbox' as const, requestId: `req_${randomUUID()}`, occurredAt: at(future, -9 * DAY + m * 60_000),
        method: 'GET', route: '/v1/lab', status: 200, durationMs: 3, keyPrefix: 'lop_test_AbCd', door: 'rest',
      })),
    );
    const pass = await runMaintenancePass(database.sql, settings, future);
    expect(pass.partitionsCreated.length).toBeGreaterThan(0);
    expect(ranged(await listPartitions(database.sql, 'sandbox_request_log')).at(-1)!.to!.getTime()).toBeGreaterThanOrEqual(future.getTime() + 14 * DAY);
    expect(ranged(await listPartitions(database.sql, 'webhook_deliveries')).at(-1)!.to!.getTime()).toBeGreaterThanOrEqual(future.getTime() + 4 * WEEK);
    expect(pass.partitionsDropped).toContainEqual({ table: 'sandbox_request_log', partition: day.name, rows: 3 });
    expect(pass.pruned.sandbox_request_log).toBe(3);
    // A second run makes none.
    expect(await ensureRetentionPartitions(database.sql, future)).toEqual([]);
  });
});
