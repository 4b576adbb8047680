import { describe, expect, it } from 'vitest';
import { CODE_NEEDS_MIGRATION, readMigrations, withDatabase } from '@lop/db';
import { testDatabaseUrl } from '@lop/testing';
import { join } from 'node:path';
import { preparePreviousRelease } from './previous-release';
import { rollingUpgrade } from './rolling-upgrade';

/** Issue 30's bar for a release: the previous one and this one side by side on one database, under traffic. */
describe('a rolling upgrade from the previous release', () => {
  it('this release serves the previous release\'s schema, and keeps its migrations as they were applied', () => {
    const previous = preparePreviousRelease();
    expect(previous.migrationTags).toContain(CODE_NEEDS_MIGRATION);
    const theirs = readMigrations(join(previous.root, 'libs/db/migrations'));
    expect(readMigrations().slice(0, theirs.length).map((m) => [m.tag, m.hash])).toEqual(theirs.map((m) => [m.tag, m.hash]));
  });

  it('with 50,000 delivery, attempt and request log rows: no 5xx or connection error, no deadlock, no lock over 1 s, every event delivered, no order lost', { timeout: 600_000 }, async () => {
    // The migrations that need a hot table's exclusive lock ask for many tries themselves
    // (`-- lop-migrate: attempts`), each waiting 200 ms at most: a shared 2-core machine (load 12-18)
    // stretched partners' transactions past ten tries in a row.
    const figures = await rollingUpgrade({ serverUrl: withDatabase(testDatabaseUrl(), 'postgres'), deliveryRows: 50_000, log: (line) => console.log(`upgrade: ${line}`) });
    console.log(`upgrade figures: ${JSON.stringify({ ...figures, migrate: { ...figures.migrate, output: undefined } })}`);
    console.log(`upgrade migrate output:\n${figures.migrate.output}`);
    expect(figures.migrate.exitCode, figures.migrate.output).toBe(0);
    // Issue 32, online under the previous release's traffic: events becomes partitioned (0016-0019),
    // then the tables pruned by age (0020-0024).
    for (const tag of [
      '0016_drop_delivery_event_fk',
      '0017_bound_legacy_events',
      '0018_partitioned_events',
      '0019_swap_in_partitioned_events',
      '0020_drop_attempt_delivery_fk',
      '0021_partition_prepare',
      '0022_partition_webhook_deliveries',
      '0023_partition_webhook_delivery_attempts',
      '0024_partition_sandbox_request_log',
    ]) {
      expect(figures.migrate.output).toMatch(new RegExp(`^applied ${tag} in \\d+ ms$`, 'm'));
    }
    expect(Object.keys(figures.partitioned)).toEqual(expect.arrayContaining(['events', 'sandbox_request_log', 'webhook_deliveries', 'webhook_delivery_attempts']));
    // Every row of the history is still there, in the legacy partitions: nothing was copied or lost.
    expect(figures.historyAfter).toEqual({ deliveries: 50_000, attempts: 50_000, requestLog: 50_000 });
    expect(figures.failures).toEqual([]);
    // A 503 sent again was a lock another transaction held past lock_timeout (seen on a starved
    // machine: a simulate on the previous release, before any migration), never a schema the code
    // did not expect: those are 500s, and fail above. How long the migration's own locks stop partners is bounded below.
    expect(figures.busy.filter((record) => !record.logged?.some((line) => line.includes('lock timeout')))).toEqual([]);
    expect(figures.byStatus['201']).toBeGreaterThan(20);
    expect(figures.deadlocks).toBe(0);
    expect(figures.lockSamples).toBeGreaterThan(100);
    expect(figures.longestBlockingLock?.ms ?? 0, JSON.stringify(figures.longestBlockingLock)).toBeLessThan(1_000);
    expect(figures.ordersMissing).toEqual([]);
    expect(figures.streamDense).toBe(true);
    expect(figures.events).toBeGreaterThan(figures.ordersCreated);
    expect(figures.eventsNotDelivered).toBe(0);
    expect(figures.deliveriesStillPending).toBe(0);
    expect(figures.deadLetters).toBeGreaterThan(0);
    expect(figures.exits).toEqual({ 'previous-api-1': 0, 'previous-api-2': 0, 'previous-worker': 0, 'new-api-1': 0, 'new-api-2': 0, 'new-worker': 0 });
    expect(figures.processProblems).toEqual([]);
  });
});
