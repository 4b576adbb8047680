import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { CODE_NEEDS_MIGRATION, createTestDatabase, migrationsFolderOf, readMigrations, runMigrations, withDatabase, type TestDatabase } from '@lop/db';
import { testDatabaseUrl } from '@lop/testing';
import { adminWithEnvironment } from './testing/run-admin';

const serverUrl = withDatabase(testDatabaseUrl(), 'postgres');
const made: TestDatabase[] = [];
afterAll(async () => {
  for (const database of made) await database.drop();
});

async function emptyDatabase(label: string): Promise<TestDatabase> {
  const database = await createTestDatabase(serverUrl, label, { migrated: false });
  made.push(database);
  return database;
}

describe('admin migrate (npm run migrate)', () => {
  it('--status on an empty database changes nothing and says what to run; migrate applies everything with progress; again, nothing to do', async () => {
    const database = await emptyDatabase('cli');
    const env = { DATABASE_URL: database.url };
    const status = await adminWithEnvironment(env, 'migrate', '--status');
    expect(status.code, status.stderr).toBe(1);
    expect(status.stdout).toBe('The database has no schema yet: run `npm run migrate` (or `npm run admin -- migrate`) with this release before starting it.\n');

    const run = await adminWithEnvironment(env, 'migrate');
    expect(run.code, run.stderr).toBe(0);
    const tags = readMigrations().map((migration) => migration.tag);
    expect(run.stdout).toBe(`Applied ${tags.length} migration(s): ${tags.join(', ')}.\n`);
    expect(run.stderr).toMatch(/^applying 0013_rollout_safe_indexes \(5 statement\(s\), each on its own\)$/m);
    expect(run.stderr).toMatch(/^applied 0013_rollout_safe_indexes in \d+ ms$/m);

    const again = await adminWithEnvironment(env, 'migrate', '--json');
    expect(again.code, again.stderr).toBe(0);
    expect(again.json()).toEqual({ applied: [], retries: 0, schema: { servable: true, pending: [] } });
  });

  it('on the previous release\'s schema: --status names what is pending; a lock it cannot get fails with migration, statement, SQLSTATE and table, and a rerun completes', async () => {
    const database = await emptyDatabase('clilock');
    const previous = await migrationsFolderOf({ upTo: CODE_NEEDS_MIGRATION });
    await runMigrations(database.url, { folder: previous.folder }).finally(() => previous.remove());
    const env = { DATABASE_URL: database.url };
    const status = await adminWithEnvironment(env, 'migrate', '--status');
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^This release serves the schema; pending: 0013_rollout_safe_indexes(, \w+)* \(npm run migrate applies them\)\.\n$/);

    // A long transaction holds a lock that conflicts with building an index on rate_limit_counters.
    const holder = postgres(database.url, { max: 1, onnotice: () => undefined });
    let release!: () => void;
    const held = holder.begin(async (tx) => {
      await tx`lock table rate_limit_counters in share mode`;
      await new Promise<void>((resolve) => (release = resolve));
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    try {
      const failed = await adminWithEnvironment(env, 'migrate', '--max-attempts', '1');
      // Progress lines first (stderr), then the one error line.
      expect(failed.code, failed.stderr).toBe(1);
      expect(failed.stdout).toBe('');
      expect(failed.stderr.trimEnd().split('\n').at(-1)).toMatch(
        /^error: migration 0013_rollout_safe_indexes failed at statement 3 \(SQLSTATE 55P03, table rate_limit_counters\): canceling statement due to lock timeout {1,3}statement: CREATE INDEX CONCURRENTLY IF NOT EXISTS "rate_limit_counters_window_idx"/,
      );
    } finally {
      release();
      await held;
      await holder.end();
    }
    const rerun = await adminWithEnvironment(env, 'migrate');
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toMatch(/^Applied \d+ migration\(s\): 0013_rollout_safe_indexes/);
  });

  it('refuses a bad --max-attempts as a usage error', async () => {
    const run = await adminWithEnvironment({ DATABASE_URL: testDatabaseUrl() }, 'migrate', '--max-attempts', '0');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--max-attempts.*expected a whole number from 1 to 100/);
  });
});
