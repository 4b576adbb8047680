import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, withDatabase, type TestDatabase } from '@lop/db';
import { testDatabaseUrl } from '@lop/testing';
import { sampleLocks } from './lock-sampler';

let database: TestDatabase | undefined;
afterAll(() => database?.drop());

describe('the lock sampler the rolling-upgrade test relies on', () => {
  it('measures a blocking lock held for 600 ms, and the wait it causes, to within a few intervals', async () => {
    database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'locksampler', { migrated: false });
    const sql = postgres(database.url, { max: 2, onnotice: () => undefined });
    try {
      await sql`create table sampled (id int)`;
      const sampler = sampleLocks(database.url, 25);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const holding = sql.begin(async (tx) => {
        await tx`lock table sampled in access exclusive mode`;
        await new Promise((resolve) => setTimeout(resolve, 600));
      });
      await new Promise((resolve) => setTimeout(resolve, 150));
      // Queued behind the lock for the rest of its 600 ms.
      await sql`select count(*) from sampled`;
      await holding;
      await new Promise((resolve) => setTimeout(resolve, 100));
      await sampler.stop();
      expect(sampler.longestBlocking).toMatchObject({ relation: 'sampled', mode: 'AccessExclusiveLock' });
      expect(sampler.longestBlocking!.ms).toBeGreaterThanOrEqual(550);
      expect(sampler.longestBlocking!.ms).toBeLessThan(1_200);
      expect(sampler.longestWait).toMatchObject({ relation: 'sampled', mode: 'AccessShareLock' });
      expect(sampler.longestWait!.ms).toBeGreaterThanOrEqual(350);
      expect(sampler.longestWait!.ms).toBeLessThan(1_200);
    } finally {
      await sql.end();
    }
  });
});
