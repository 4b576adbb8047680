import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@lop/db';
import { DELIVERY_QUEUES, openDeliveryQueue, type DeliveryQueue } from './delivery-queue';

const settings = { attemptTimeoutSeconds: 5, pollIntervalSeconds: 1, historyRetentionSeconds: 86_400 };

/**
 * A backlog arrives faster than the statistics count it. Planned from statistics that expect a
 * handful of queued jobs, pg-boss's fetch bitmap-scanned and sorted every queued job to hand out a
 * batch (6.6 ms a fetch at 10,000 queued). The worker's connections plan it without bitmap scans,
 * so a fetch walks the ordered queue index and stops at its batch (docs/operations.md).
 */
describe("a worker's pg-boss fetch on a backlog its statistics have not seen", () => {
  let database: TestDatabase;
  let worker: DeliveryQueue;
  let sender: DeliveryQueue;
  beforeAll(async () => {
    database = await createTestDatabase(inject('databaseUrl'), 'fetch_plan');
    worker = await openDeliveryQueue({ databaseUrl: database.url, settings, role: 'worker', applicationName: 'fetch-plan-worker' });
    sender = await openDeliveryQueue({ databaseUrl: database.url, settings, role: 'sender', applicationName: 'fetch-plan-sender' });
  });
  afterAll(async () => {
    await worker.boss.stop({ graceful: false });
    await sender.boss.stop({ graceful: false });
    await database.drop();
  });

  it('runs on connections without bitmap scans (a sender keeps the default)', async () => {
    const setting = async (queue: DeliveryQueue) => (await queue.boss.getDb().executeSql('show enable_bitmapscan')).rows[0].enable_bitmapscan;
    expect(await setting(worker)).toBe('off');
    expect(await setting(sender)).toBe('on');
  });

  it('walks the queue index in order instead of sorting the whole backlog', async () => {
    const queue = DELIVERY_QUEUES.sandbox;
    const db = worker.boss.getDb();
    const jobs = async (label: string, perClient: number) => {
      for (let client = 0; client < 8; client++) {
        await sender.boss.insert(queue, Array.from({ length: perClient }, (_, i) => ({ data: { delivery_id: `${label}-${client}-${i}`, attempt: 1 }, group: { id: `client-${client}` } })));
      }
    };
    // A queue whose jobs are done, then a backlog of 10,000 jobs of 8 clients before any statistics
    // are taken (as the bench's drain meets it).
    await jobs('done', 100);
    await db.executeSql(`update pgboss.job set state = 'completed', completed_on = now() where name = $1`, [queue]);
    await jobs('queued', 1250);

    // The fetch statements exactly as pg-boss sends them, caught on their way to the database: the
    // dispatcher's entitled fetch (skipping clients at their cap) and its borrowing one.
    const statements: { text: string; values?: unknown[] }[] = [];
    const executeSql = db.executeSql.bind(db);
    db.executeSql = (text, values) => {
      if (/\bnext AS\b/.test(text)) statements.push({ text, values });
      return executeSql(text, values);
    };
    try {
      expect(await worker.boss.fetch(queue, { batchSize: 16, ignoreGroups: ['client-0'], groupConcurrency: 8 })).not.toHaveLength(0);
      expect(await worker.boss.fetch(queue, { batchSize: 16 })).toHaveLength(16);
    } finally {
      db.executeSql = executeSql;
    }
    expect(statements).toHaveLength(2);
    for (const statement of statements) {
      const { rows } = await db.executeSql(`explain ${statement.text}`, statement.values);
      const plan = rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index Scan using job_\w*i11 on job_\w+ j/);
      expect(plan).not.toMatch(/Bitmap Heap Scan on job_/);
      expect(plan).not.toMatch(/Sort Key: j(_\d+)?\.priority DESC/);
    }
  });
});
