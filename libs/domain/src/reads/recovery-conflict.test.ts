import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { startReplicaPair, type ReplicaPair } from '@lop/db/testing/replica';
import type { Caller } from '../auth/authenticate';
import { readThroughReplicas } from './read-routing';
import { ReplicaSet, type Replica } from './replica-set';

/**
 * A real recovery conflict: a replica that may not delay replay (max_standby_streaming_delay = 0)
 * cancels a read that holds a table the primary then locks. The read is answered by the primary.
 */
describe('a replica read cancelled by a recovery conflict', () => {
  let pair: ReplicaPair;
  let database: TestDatabase;
  let primary: DatabaseConnection;
  let replicas: ReplicaSet;

  beforeAll(async () => {
    pair = await startReplicaPair({ settings: { max_standby_streaming_delay: '0', hot_standby_feedback: 'off' } });
    database = await createTestDatabase(pair.primaryUrl, 'conflict');
    primary = connectDatabase(database.url, { max: 2 });
    await primary.sql`create table conflict_probe (id int)`;
    await primary.sql`insert into conflict_probe values (1)`;
    await pair.waitForReplay();
    replicas = new ReplicaSet({ urls: [pair.onReplica(database.url)], primary: primary.sql, maxLagSeconds: 3600, maxLagBytes: 1024 ** 3, connect: { max: 2 } });
    await replicas.check();
  }, 180_000);

  afterAll(async () => {
    await replicas?.close();
    await primary?.close();
    await pair?.stop();
  }, 60_000);

  it('is run again on the primary: the partner never sees "canceling statement due to conflict with recovery"', { timeout: 60_000 }, async () => {
    const caller: Caller = { keyId: 'k', keyPrefix: 'lop_test_x', clientId: '00000000-0000-4000-8000-000000000001', laboratoryId: '00000000-0000-4000-8000-000000000002', environment: 'sandbox', scopes: new Set(), readPosition: 0 };
    const failures: unknown[] = [];
    const counted: string[] = [];
    const set = { candidates: () => replicas.candidates(), markDown: (r: Replica, e: unknown) => replicas.markDown(r, e), count: (route: Parameters<ReplicaSet['count']>[0]) => void counted.push(route) };
    expect(replicas.candidates()).toHaveLength(1);

    const answer = await readThroughReplicas(
      set,
      caller,
      async (replica) => {
        if (!replica) return { on: 'primary', rows: await primary.sql`select id from conflict_probe` };
        // A read holding the table while the primary takes an ACCESS EXCLUSIVE lock on it, which replay must apply.
        const reading = replica.sql`select id, pg_sleep(5) from conflict_probe`.then(
          (rows) => ({ on: 'replica', rows }),
          (error: unknown) => ({ on: 'replica', error }),
        );
        await new Promise((resolve) => setTimeout(resolve, 500));
        await primary.sql`alter table conflict_probe add column extra int`;
        const result = await reading;
        if ('error' in result) failures.push(result.error);
        return result;
      },
      (result) => ('error' in result ? result.error : undefined),
    );

    expect(answer).toMatchObject({ on: 'primary', rows: [{ id: 1 }] });
    expect(counted).toEqual(['primary_after_replica_error']);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ code: '40001', message: expect.stringMatching(/canceling statement due to conflict with recovery/) });
    // A conflict is this read's misfortune, not the replica's: it stays in use.
    await replicas.check();
    expect(replicas.states()[0].state).toBe('up');
  });
});
