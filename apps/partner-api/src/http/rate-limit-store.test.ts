import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { Options } from 'express-rate-limit';
import postgres from 'postgres';
import { createTestDatabase } from '@lop/db';
import { startEmbeddedPrimary, type EmbeddedServer } from '@lop/db/testing/replica';
import { connectFixtures } from '../testing/harness';
import { PostgresRateLimitStore } from './rate-limit';

const fx = connectFixtures();
afterAll(() => fx.close());

describe('rate-limit counters', () => {
  it('are never deleted on a request’s path: pruning is the scheduled retention pass’s job', async () => {
    const stale = `stale:${randomUUID()}`;
    await fx.sql`insert into rate_limit_counters (subject, window_start, count) values (${stale}, now() - interval '2 hours', 5)`;
    const store = new PostgresRateLimitStore(fx.sql);
    store.init({ windowMs: 60_000 } as Options);
    const key = `live:${randomUUID()}`;
    // A delete on 1 % of increments would have fired at least once in 1,000 with 99.996 % probability.
    for (let i = 0; i < 1_000; i++) await store.increment(key);
    const left = await fx.sql<{ count: number }[]>`select count from rate_limit_counters where subject = ${stale}`;
    expect(left.map((r) => r.count)).toEqual([5]);
    const [live] = await fx.sql<{ count: number }[]>`select count from rate_limit_counters where subject = ${key}`;
    // Two windows at most if the loop crossed a minute boundary.
    expect(live.count).toBeGreaterThan(0);
  });
});

describe('a spent budget', () => {
  it('is refused in this process until its window ends, without another write to the counter row', async () => {
    const store = new PostgresRateLimitStore(fx.sql);
    store.init({ windowMs: 60_000, limit: 3 } as Options);
    const key = `spent:${randomUUID()}`;
    const hits: number[] = [];
    for (let i = 0; i < 10; i++) hits.push((await store.increment(key)).totalHits);
    // The limit is 3: the 4th hit is the first refusal, and from then on the row is left alone.
    expect(hits).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const rows = await fx.sql<{ count: number }[]>`select count from rate_limit_counters where subject = ${key}`;
    // One row, or two if the loop crossed a minute boundary; never more than limit + 1 hits written to one.
    for (const row of rows) expect(row.count).toBeLessThanOrEqual(4);
    expect(rows.reduce((sum, row) => sum + row.count, 0)).toBeLessThanOrEqual(8);
  });
});

describe('an increment', () => {
  // A server whose synchronous commits wait for a standby that never comes: a commit that waits
  // for durability never returns, and keeps its row locks while it waits (as it does for a slow flush).
  let server: EmbeddedServer | undefined;
  afterAll(() => server?.stop());

  it('commits without waiting for its WAL to be made durable, so the counter row is never held for a flush', { timeout: 120_000 }, async () => {
    server = await startEmbeddedPrimary();
    const database = await createTestDatabase(server.url, 'async_commit');
    const admin = postgres(server.url, { max: 1, onnotice: () => undefined });
    await admin`alter system set synchronous_standby_names = 'nobody'`;
    await admin`select pg_reload_conf()`;
    await admin.end();
    const sql = postgres(database.url, { max: 4, onnotice: () => undefined });
    try {
      // The set-up holds: an ordinary commit of the counter table waits (and so holds its row).
      const waiting = sql`insert into rate_limit_counters (subject, window_start, count) values ('control', now(), 1)`.then(() => 'committed');
      expect(await Promise.race([waiting, new Promise((resolve) => setTimeout(() => resolve('waiting'), 1_000))])).toBe('waiting');

      const store = new PostgresRateLimitStore(sql);
      store.init({ windowMs: 60_000, limit: 100 } as Options);
      const key = `async:${randomUUID()}`;
      // Three at once on one row, then more: each returns, none queued behind another's flush.
      const within = <T>(work: Promise<T>) => Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the increment waited for a durable commit')), 10_000))]);
      const hits = await within(Promise.all([store.increment(key), store.increment(key), store.increment(key)]));
      expect(hits.map((hit) => hit.totalHits).sort()).toEqual([1, 2, 3]);
      expect((await within(store.increment(key))).totalHits).toBe(4);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
