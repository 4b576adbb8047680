import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { CODE_NEEDS_MIGRATION, MIGRATION_DEFAULTS, MigrationError, MigrationFileError, readMigrations, runMigrations, schemaVerdict, tableOf } from '../migrate';
import { createTestDatabase, migrationsFolderOf, withDatabase } from '../test-database';

const serverUrl = withDatabase(inject('databaseUrl'), 'postgres');
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function folderWith(extra: { tag: string; sql: string }[], upTo?: string): Promise<string> {
  const { folder, remove } = await migrationsFolderOf({ extra, upTo });
  cleanups.push(remove);
  return folder;
}

async function migratedDatabase(label: string): Promise<{ url: string; sql: postgres.Sql }> {
  const database = await createTestDatabase(serverUrl, label);
  const sql = postgres(database.url, { max: 4, onnotice: () => undefined });
  cleanups.push(async () => {
    await sql.end();
    await database.drop();
  });
  return { url: database.url, sql };
}

const elapsed = (since: number) => Date.now() - since;

/** A transaction that has read `table` (so holds its ACCESS SHARE lock) and stays open until released. */
async function holdOpenAfterReading(url: string, table: string): Promise<{ release(): Promise<void> }> {
  const holder = postgres(url, { max: 1, onnotice: () => undefined });
  cleanups.push(() => holder.end());
  let release!: () => void;
  let reading!: () => void;
  const hasRead = new Promise<void>((resolve) => (reading = resolve));
  const held = holder.begin(async (tx) => {
    await tx.unsafe(`select count(*) from "${table}"`);
    reading();
    await new Promise<void>((resolve) => (release = resolve));
  });
  await hasRead;
  return {
    release: async () => {
      release();
      await held;
    },
  };
}

describe('the migration runner', () => {
  it('every committed migration reads: directives understood, statements split as drizzle-kit wrote them', () => {
    const migrations = readMigrations();
    expect(migrations.length).toBeGreaterThanOrEqual(14);
    expect(migrations.map((migration) => migration.tag)).toContain(CODE_NEEDS_MIGRATION);
    const indexes = migrations.find((migration) => migration.tag === '0013_rollout_safe_indexes')!;
    expect(indexes.transactional).toBe(false);
    expect(indexes.statements.filter((statement) => /CREATE INDEX CONCURRENTLY/.test(statement.text))).toHaveLength(3);
  });

  it('refuses a file it cannot run as written before running anything: an unknown directive, a backfill inside a transaction', async () => {
    expect(() => readMigrations(undefined)).not.toThrow();
    const unknown = await folderWith([{ tag: '9001_typo', sql: '-- lop-migrate: no-transactoin\nselect 1;' }]);
    expect(() => readMigrations(unknown)).toThrow(new MigrationFileError('9001_typo.sql: unknown or incomplete directive "-- lop-migrate: no-transactoin"'));
    const transactional = await folderWith([{ tag: '9001_backfill', sql: '-- lop-migrate: backfill\nupdate orders set status = status where false;' }]);
    expect(() => readMigrations(transactional)).toThrow(/must say "-- lop-migrate: no-transaction"/);
  });

  it('a statement waiting behind a long transaction gives up at the lock timeout, lets queued queries through, and is retried until it succeeds', async () => {
    const { url, sql } = await migratedDatabase('lockwait');
    const folder = await folderWith([{ tag: '9001_add_column', sql: 'ALTER TABLE "webhook_deliveries" ADD COLUMN IF NOT EXISTS "note" text;' }]);
    // A partner transaction that has read the table and stays open until the reads below are done (2 s and more).
    const holder = await holdOpenAfterReading(url, 'webhook_deliveries');
    const progress: string[] = [];
    const migrating = runMigrations(url, { folder, lockTimeoutMs: 150, retryBaseMs: 50, onProgress: (line) => progress.push(line) });

    // While the migration retries, other queries on the table are never queued behind it for long.
    const reads: number[] = [];
    for (let i = 0; i < 8; i++) {
      const started = Date.now();
      await sql`select count(*) from webhook_deliveries`;
      reads.push(elapsed(started));
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await holder.release();
    const run = await migrating;
    expect(run.applied).toEqual(['9001_add_column']);
    expect(run.retries).toBeGreaterThan(0);
    expect(progress.some((line) => /^9001_add_column statement 1: lock timeout on webhook_deliveries \(SQLSTATE 55P03\); retrying in \d+ ms \(attempt 2 of (\d+)\)$/.exec(line)?.[1] === String(MIGRATION_DEFAULTS.maxAttempts))).toBe(true);
    expect(Math.max(...reads)).toBeLessThan(1_000);
    const [column] = await sql`select column_name from information_schema.columns where table_name = 'webhook_deliveries' and column_name = 'note'`;
    expect(column).toBeDefined();
  });

  it('gives up after its attempts with the cause an operator needs: migration, statement, SQLSTATE, table; nothing is recorded', async () => {
    const { url, sql } = await migratedDatabase('lockfail');
    const folder = await folderWith([
      { tag: '9001_two_steps', sql: 'ALTER TABLE "orders" ADD COLUMN IF NOT EXISTS "a" text;--> statement-breakpoint\nALTER TABLE "webhook_deliveries" ADD COLUMN IF NOT EXISTS "b" text;' },
    ]);
    const holder = await holdOpenAfterReading(url, 'webhook_deliveries');
    const failure = await runMigrations(url, { folder, lockTimeoutMs: 50, maxAttempts: 3, retryBaseMs: 10 }).catch((error: unknown) => error);
    await holder.release();
    expect(failure).toBeInstanceOf(MigrationError);
    const error = failure as MigrationError;
    expect([error.tag, error.statement?.ordinal, error.sqlstate, error.table, error.attempts]).toEqual(['9001_two_steps', 2, '55P03', 'webhook_deliveries', 3]);
    expect(error.message).toBe(
      'migration 9001_two_steps failed at statement 2 (SQLSTATE 55P03, table webhook_deliveries, after 3 attempts): canceling statement due to lock timeout\n' +
        '  statement: ALTER TABLE "webhook_deliveries" ADD COLUMN IF NOT EXISTS "b" text;',
    );
    // The migration's transaction rolled back whole: its first statement left nothing either.
    const columns = await sql`select column_name from information_schema.columns where (table_name, column_name) in (('orders', 'a'), ('webhook_deliveries', 'b'))`;
    expect(columns).toHaveLength(0);
    expect(await schemaVerdict(sql, { folder })).toEqual({ servable: true, pending: ['9001_two_steps'] });
  });

  it('a migration may ask for more attempts than the runner gives (-- lop-migrate: attempts N), never fewer', async () => {
    const { url } = await migratedDatabase('attempts');
    const folder = await folderWith([
      { tag: '9001_patient', sql: '-- lop-migrate: attempts 5\nALTER TABLE "webhook_deliveries" ADD COLUMN IF NOT EXISTS "c" text;' },
      { tag: '9002_modest', sql: '-- lop-migrate: attempts 1\nALTER TABLE "webhook_deliveries" ADD COLUMN IF NOT EXISTS "d" text;' },
    ]);
    expect(readMigrations(folder).slice(-2).map((m) => m.attempts)).toEqual([5, 1]);
    const holder = await holdOpenAfterReading(url, 'webhook_deliveries');
    const failure = await runMigrations(url, { folder, lockTimeoutMs: 50, maxAttempts: 3, retryBaseMs: 10 }).catch((error: unknown) => error);
    await holder.release();
    expect((failure as MigrationError).attempts).toBe(5);
    expect((failure as MigrationError).tag).toBe('9001_patient');
  });

  it('a deadlock with running code (tables locked in the other order) is retried, and the migration applies', async () => {
    const { url, sql } = await migratedDatabase('deadlock');
    await sql`create table lock_parent (id int)`;
    await sql`create table lock_child (id int)`;
    const folder = await folderWith([
      { tag: '9001_both_tables', sql: 'LOCK TABLE "lock_parent" IN ACCESS EXCLUSIVE MODE;--> statement-breakpoint\nLOCK TABLE "lock_child" IN ACCESS EXCLUSIVE MODE;' },
    ]);
    const worker = postgres(url, { max: 1, onnotice: () => undefined });
    cleanups.push(() => worker.end());
    // "Running code": holds the child, then (once the migration holds the parent and waits for the child) wants the parent.
    let workerDone!: Promise<unknown>;
    const childHeld = new Promise<void>((resolve) => {
      workerDone = worker.begin(async (tx) => {
        await tx`lock table lock_child in row exclusive mode`;
        resolve();
        await new Promise((wait) => setTimeout(wait, 300));
        await tx`lock table lock_parent in row exclusive mode`;
      });
    });
    await childHeld;
    const progress: string[] = [];
    const run = await runMigrations(url, { folder, lockTimeoutMs: 3_000, retryBaseMs: 50, onProgress: (line) => progress.push(line) });
    await workerDone;
    expect(run.applied).toEqual(['9001_both_tables']);
    expect(progress.some((line) => /^9001_both_tables statement 2: deadlock on lock_child \(SQLSTATE 40P01\); retrying/.test(line))).toBe(true);
  });

  it('a backfill runs in committed batches until no row is left, with progress', async () => {
    const { url, sql } = await migratedDatabase('backfill');
    await sql`create table backfill_target (id serial primary key, x int not null, y int)`;
    await sql`insert into backfill_target (x) select g from generate_series(1, 1050) g`;
    const folder = await folderWith([
      {
        tag: '9001_backfill_y',
        sql: [
          '-- lop-migrate: no-transaction',
          'SET lock_timeout = \'1s\';',
          '--> statement-breakpoint',
          '-- lop-migrate: backfill',
          'UPDATE "backfill_target" SET "y" = "x" * 2 WHERE "id" IN (SELECT "id" FROM "backfill_target" WHERE "y" IS NULL LIMIT 100);',
        ].join('\n'),
      },
    ]);
    const progress: string[] = [];
    await runMigrations(url, { folder, onProgress: (line) => progress.push(line) });
    expect(progress).toContain('9001_backfill_y statement 2 (backfill): done, 1,050 rows in 11 batches');
    const [{ left, wrong }] = await sql`select count(*) filter (where y is null)::int as left, count(*) filter (where y <> x * 2)::int as wrong from backfill_target`;
    expect([left, wrong]).toEqual([0, 0]);
  });

  it('an index a failed concurrent build left INVALID is built again, not taken as done by IF NOT EXISTS', async () => {
    const { url, sql } = await migratedDatabase('invalidindex');
    await sql`create table keyed (k int)`;
    await sql`insert into keyed values (1), (1)`;
    await sql.unsafe('create unique index concurrently keyed_k_idx on keyed (k)').catch(() => undefined);
    const [before] = await sql`select i.indisvalid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'keyed_k_idx'`;
    expect(before.indisvalid).toBe(false);
    await sql`delete from keyed where ctid = (select max(ctid) from keyed)`;
    const folder = await folderWith([
      { tag: '9001_keyed_index', sql: '-- lop-migrate: no-transaction\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "keyed_k_idx" ON "keyed" USING btree ("k");' },
    ]);
    await runMigrations(url, { folder });
    const [after] = await sql`select i.indisvalid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'keyed_k_idx'`;
    expect(after.indisvalid).toBe(true);
  });

  it('drizzle\'s migrator in the previous release finds nothing to do on a database this runner migrated further', async () => {
    const { sql } = await migratedDatabase('previous');
    const previous = await folderWith([], CODE_NEEDS_MIGRATION);
    const [{ n: before }] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
    await migrate(drizzle(sql), { migrationsFolder: previous });
    const [{ n: after }] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
    expect(after).toBe(before);
    // And it records what drizzle would, so a database drizzle migrated is one this runner continues.
    const fresh = await createTestDatabase(serverUrl, 'fromdrizzle', { migrated: false });
    const freshSql = postgres(fresh.url, { max: 1, onnotice: () => undefined });
    cleanups.push(async () => {
      await freshSql.end();
      await fresh.drop();
    });
    await migrate(drizzle(freshSql), { migrationsFolder: previous });
    const run = await runMigrations(fresh.url);
    expect(run.applied).toEqual(readMigrations().slice(readMigrations(previous).length).map((migration) => migration.tag));
  });

  it('serves the schema one release back and one ahead; refuses one that lacks what the code needs, or that a contract step closed', async () => {
    const { url, sql } = await migratedDatabase('compat');
    // One release ahead, expand only: this release serves it.
    const ahead = await folderWith([{ tag: '9001_expand', sql: 'ALTER TABLE "orders" ADD COLUMN IF NOT EXISTS "future" text;' }]);
    await runMigrations(url, { folder: ahead });
    expect(await schemaVerdict(sql)).toEqual({ servable: true, pending: [] });
    // Its contract step (the release after drops what this one reads): refused, with the release to deploy.
    const contract = await folderWith([
      { tag: '9001_expand', sql: 'ALTER TABLE "orders" ADD COLUMN IF NOT EXISTS "future" text;' },
      { tag: '9002_contract', sql: '-- lop-migrate: requires-code-from 9001_expand\nSELECT 1;' },
    ]);
    await runMigrations(url, { folder: contract });
    const refused = await schemaVerdict(sql);
    expect(refused).toEqual({
      servable: false,
      reason: 'ahead',
      missing: [],
      sentence: 'The database was migrated past what this release serves: its migration 9002_contract needs a release that has 9001_expand; deploy that release or a newer one.',
    });
    expect(await schemaVerdict(sql, { folder: contract })).toEqual({ servable: true, pending: [] });

    // One release back: served while this release's own migrations (none of which its code needs) are pending.
    const back = await createTestDatabase(serverUrl, 'back', { migrated: false });
    const backSql = postgres(back.url, { max: 1, onnotice: () => undefined });
    cleanups.push(async () => {
      await backSql.end();
      await back.drop();
    });
    await runMigrations(back.url, { folder: await folderWith([], CODE_NEEDS_MIGRATION) });
    const pending = readMigrations().slice(readMigrations().findIndex((migration) => migration.tag === CODE_NEEDS_MIGRATION) + 1).map((migration) => migration.tag);
    expect(await schemaVerdict(backSql)).toEqual({ servable: true, pending });
    // Two back: lacks what the code needs.
    const older = await createTestDatabase(serverUrl, 'older', { migrated: false });
    const olderSql = postgres(older.url, { max: 1, onnotice: () => undefined });
    cleanups.push(async () => {
      await olderSql.end();
      await older.drop();
    });
    await runMigrations(older.url, { folder: await folderWith([], '0011_sandbox_request_log') });
    expect(await schemaVerdict(olderSql)).toEqual({
      servable: false,
      reason: 'behind',
      missing: [CODE_NEEDS_MIGRATION],
      sentence: `The database schema is older than this release serves (1 migration(s) missing, the first ${CODE_NEEDS_MIGRATION}): run \`npm run migrate\` with this release before starting it.`,
    });
  });

  it('names the table a statement works on, for messages', () => {
    expect(tableOf('ALTER TABLE "webhook_deliveries" ADD COLUMN "x" int')).toBe('webhook_deliveries');
    expect(tableOf('-- why\nCREATE INDEX CONCURRENTLY IF NOT EXISTS "i" ON "rate_limit_counters" USING btree ("window_start")')).toBe('rate_limit_counters');
    expect(tableOf('UPDATE "public"."orders" SET a = 1')).toBe('public.orders');
    expect(tableOf('SET lock_timeout = 1')).toBeUndefined();
  });
});
