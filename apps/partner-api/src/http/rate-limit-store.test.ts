import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { Options } from 'express-rate-limit';
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
