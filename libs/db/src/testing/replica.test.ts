import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../test-database';
import { startReplicaPair, startStreamingReplica, type ReplicaPair } from './replica';

describe('streaming replica harness', () => {
  let pair: ReplicaPair;
  beforeAll(async () => {
    pair = await startReplicaPair();
  }, 120_000);
  afterAll(async () => {
    await pair?.stop();
  });

  it('replays what the primary commits, shows nothing newer while replay is paused, and measures its lag', { timeout: 60_000 }, async () => {
    const database = await createTestDatabase(pair.primaryUrl, 'replica', { migrated: false });
    const primary = postgres(database.url, { max: 1, onnotice: () => undefined });
    const replica = postgres(pair.onReplica(database.url), { max: 1, onnotice: () => undefined });
    try {
      await primary`create table t (id int primary key)`;
      await primary`insert into t values (1)`;
      await pair.waitForReplay();
      expect(await replica`select id from t`).toEqual([{ id: 1 }]);
      expect(await replica`select pg_is_in_recovery() as r`).toEqual([{ r: true }]);
      expect((await pair.lag()).bytes).toBe(0);

      await pair.pauseReplay();
      await primary`insert into t values (2)`;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await replica`select id from t order by id`).toEqual([{ id: 1 }]);
      const paused = await pair.lag();
      expect(paused.replayPaused).toBe(true);
      expect(paused.bytes).toBeGreaterThan(0);

      await pair.resumeReplay();
      await pair.waitForReplay();
      expect(await replica`select id from t order by id`).toEqual([{ id: 1 }, { id: 2 }]);
    } finally {
      await replica.end();
      await primary.end();
      await database.drop();
    }
  });

  it('a second replica of the same primary streams too, and its stop() leaves no slot holding the primary WAL', { timeout: 60_000 }, async () => {
    const second = await startStreamingReplica(pair.primary);
    const primary = postgres(pair.primaryUrl, { max: 1, onnotice: () => undefined });
    try {
      expect((await primary`select count(*)::int as n from pg_replication_slots`)[0].n).toBe(2);
      await second.waitForReplay();
      await second.stop();
      expect((await primary`select count(*)::int as n from pg_replication_slots`)[0].n).toBe(1);
    } finally {
      await primary.end();
    }
  });

  it('stopReplica leaves the primary serving', { timeout: 60_000 }, async () => {
    await pair.stopReplica();
    const primary = postgres(pair.primaryUrl, { max: 1, onnotice: () => undefined });
    expect(await primary`select 1 as one`).toEqual([{ one: 1 }]);
    await primary.end();
    const replica = postgres(pair.replicaUrl, { max: 1, onnotice: () => undefined, connect_timeout: 2 });
    await expect(replica`select 1`).rejects.toThrow();
    await replica.end();
  });
});
