import { eq, inArray } from 'drizzle-orm';
import { pino } from 'pino';
import { register } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, idempotencyKeys, webhookDeliveries, webhookDeliveryAttempts, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { DELIVERY_QUEUES, MAINTENANCE_CRON, MAINTENANCE_QUEUE } from '@lop/domain';
import { eventually, newPartner, subscribe, testDatabaseUrl, workerConfig } from '@lop/testing';
import { startDeliveryWorker, type RunningDeliveryWorker } from './worker';

// A database of its own: the pass prunes whatever is old in it, and two workers share its schedule.
let testDatabase: TestDatabase;
let database: DatabaseConnection;
const workers: { worker: RunningDeliveryWorker; passes: object[] }[] = [];
const DAY = 86_400_000;

/** A worker whose log lines about retention passes are kept. */
async function startWorker(url: string) {
  const passes: object[] = [];
  const logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        const entry = JSON.parse(line) as { msg: string };
        if (entry.msg.startsWith('retention pass')) passes.push(entry);
      },
    },
  );
  const worker = await startDeliveryWorker(url, { config: workerConfig({ PARTNER_WEBHOOK_RETENTION_DAYS: '2', PARTNER_IDEMPOTENCY_KEY_RETENTION_HOURS: '24' }), logger });
  workers.push({ worker, passes });
  return worker;
}

const pruned = async (table: string) => (await register.getSingleMetric('partner_retention_pruned_rows_total')!.get()).values.find((v) => v.labels.table === table)?.value ?? 0;

beforeAll(async () => {
  testDatabase = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'maintenance');
  database = connectDatabase(testDatabase.url, { max: 2, applicationName: 'maintenance-test' });
  await startWorker(testDatabase.url);
  await startWorker(testDatabase.url);
});
afterAll(async () => {
  for (const { worker } of workers) await worker.close();
  await database?.close();
  await testDatabase?.drop();
});

describe('the scheduled maintenance job', () => {
  it('is one pg-boss schedule, shared by every worker', async () => {
    const schedules = await workers[0].worker.queue.boss.getSchedules();
    expect(schedules.map((s) => [s.name, s.cron, s.timezone])).toEqual([[MAINTENANCE_QUEUE, MAINTENANCE_CRON, 'UTC']]);
  });

  it('sets pg-boss’s own retention to the delivery history’s: nothing of a delivery outlives the configured days', async () => {
    for (const name of Object.values(DELIVERY_QUEUES)) {
      const queue = await workers[0].worker.queue.boss.getQueue(name);
      expect(queue).toMatchObject({ retentionSeconds: 2 * 86_400, deleteAfterSeconds: 86_400 });
    }
  });

  it('prunes what outlived its window, in one worker only, and counts the rows per table', async () => {
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, 'http://127.0.0.1:9/never');
    // Rows as they would look after the clock moved past their windows: finished three days ago, created two days ago.
    const [old] = await database.db
      .insert(webhookDeliveries)
      .values({ subscriptionId: subscription.subscription_id, kind: 'test', state: 'dead_lettered', attemptsMade: 1, createdAt: new Date(Date.now() - 4 * DAY), completedAt: new Date(Date.now() - 3 * DAY) })
      .returning();
    await database.db.insert(webhookDeliveryAttempts).values({ deliveryId: old.id, attemptNumber: 1, startedAt: new Date(Date.now() - 4 * DAY), durationMs: 5, outcome: 'dead_lettered' });
    const [recent] = await database.db
      .insert(webhookDeliveries)
      .values({ subscriptionId: subscription.subscription_id, kind: 'test', state: 'delivered', attemptsMade: 1, completedAt: new Date(Date.now() - DAY) })
      .returning();
    await database.db.insert(idempotencyKeys).values([
      { clientId: partner.clientId, environment: 'sandbox', key: 'two-days-old', requestHash: 'h', state: 'completed', lockedUntil: new Date(Date.now() - 2 * DAY), createdAt: new Date(Date.now() - 2 * DAY) },
      { clientId: partner.clientId, environment: 'sandbox', key: 'an-hour-old', requestHash: 'h', state: 'completed', lockedUntil: new Date(), createdAt: new Date(Date.now() - DAY / 24) },
    ]);
    const before = { deliveries: await pruned('webhook_deliveries'), attempts: await pruned('webhook_delivery_attempts'), keys: await pruned('idempotency_keys') };

    // What the cron pass does every ten minutes, without waiting for it.
    const boss = workers[0].worker.queue.boss;
    const id = await boss.send(MAINTENANCE_QUEUE);
    expect(id).toEqual(expect.any(String));
    await eventually(async () => expect((await boss.findJobs(MAINTENANCE_QUEUE, { id: id! }))[0]?.state).toBe('completed'));

    const deliveries = await database.db.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(inArray(webhookDeliveries.id, [old.id, recent.id]));
    expect(deliveries.map((d) => d.id)).toEqual([recent.id]);
    expect(await database.db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, old.id))).toEqual([]);
    const keys = await database.db.select({ key: idempotencyKeys.key }).from(idempotencyKeys).where(eq(idempotencyKeys.clientId, partner.clientId));
    expect(keys.map((k) => k.key)).toEqual(['an-hour-old']);
    expect(await pruned('webhook_deliveries')).toBe(before.deliveries + 1);
    expect(await pruned('webhook_delivery_attempts')).toBe(before.attempts + 1);
    expect(await pruned('idempotency_keys')).toBe(before.keys + 1);
    expect(await register.getSingleMetric('partner_retention_last_run_timestamp_seconds')!.get()).toMatchObject({ values: [{ value: expect.any(Number) }] });

    // Each job ran in one of the two workers, once (a cron occurrence may have come due meanwhile: it counts too).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const completed = (await boss.findJobs(MAINTENANCE_QUEUE)).filter((job) => job.state === 'completed');
    expect(workers.flatMap((w) => w.passes)).toHaveLength(completed.length);
  });
});
