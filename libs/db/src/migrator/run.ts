import postgres from 'postgres';
import { migrationsFolder, readMigrations, type Migration, type MigrationStatement } from './read';
import { appliedMigrations, ensureBookkeeping, recordApplied } from './bookkeeping';

// Arbitrary constant, the same since the first release: serialises migration runs of every
// release (drizzle's migrator in older ones waits on it too).
const MIGRATION_LOCK_ID = 7_402_118_331;

/** SQLSTATEs after which a statement is tried again: lock_not_available (lock_timeout), deadlock_detected. */
const RETRIED = new Set(['55P03', '40P01']);

export interface MigrateOptions {
  folder?: string;
  /** The lock_timeout each migration starts with (ms); a file's own `SET lock_timeout` (Squawk asks for one) takes over from there. */
  lockTimeoutMs?: number;
  /** Tries per statement (per migration, for one in a transaction) before the run fails. */
  maxAttempts?: number;
  /** First retry's wait (ms); doubled each time, with jitter, up to 5 s. */
  retryBaseMs?: number;
  /** One line of progress: each migration, each retry, a backfill's rows every second. */
  onProgress?: (line: string) => void;
  /** Application name the run's connection shows in pg_stat_activity. */
  applicationName?: string;
}

// 30 tries: with the backoff capped at 5 s, about two minutes of a table kept busy by partners'
// transactions before the run gives up. Each try makes their writes queue for one lock_timeout at
// most, so trying longer costs them little; 10 gave up after ~25 s while the previous release's
// transactions on `orders` outlasted 200 ms under load (0026, the rolling-upgrade test).
export const MIGRATION_DEFAULTS: Readonly<Settings> = { lockTimeoutMs: 1_000, maxAttempts: 30, retryBaseMs: 200 };

/**
 * Why a migration failed, for an operator: which migration and statement, PostgreSQL's SQLSTATE
 * and the table it was working on. The message is the whole explanation (`npm run migrate` prints it).
 */
export class MigrationError extends Error {
  constructor(
    readonly tag: string,
    readonly statement: MigrationStatement | undefined,
    readonly sqlstate: string | undefined,
    readonly table: string | undefined,
    readonly attempts: number,
    cause: unknown,
  ) {
    const what = statement ? `statement ${statement.ordinal}` : 'recording it';
    const where = [sqlstate && `SQLSTATE ${sqlstate}`, table && `table ${table}`, attempts > 1 && `after ${attempts} attempts`].filter(Boolean).join(', ');
    const text = statement ? `\n  statement: ${oneLine(statement.text)}` : '';
    super(`migration ${tag} failed at ${what}${where ? ` (${where})` : ''}: ${(cause as Error)?.message ?? String(cause)}${text}`, { cause });
    this.name = 'MigrationError';
  }
}

export interface MigrationRun {
  applied: string[];
  retries: number;
}

/**
 * Applies every committed migration not yet applied, in order, under an advisory lock (replicas
 * or operators running it at once migrate once). Statements wait for a lock only as long as the
 * lock_timeout, and are retried with backoff on lock timeout or deadlock, so a migration queued
 * behind a running transaction never holds partners' queries up for long (docs/migrations.md).
 */
export async function runMigrations(url: string, options: MigrateOptions = {}): Promise<MigrationRun> {
  const settings = { ...MIGRATION_DEFAULTS, ...options };
  const progress = options.onProgress ?? (() => undefined);
  const sql = postgres(url, { max: 1, onnotice: () => undefined, connection: { application_name: options.applicationName ?? 'lop-migrate' } });
  const run: MigrationRun = { applied: [], retries: 0 };
  try {
    await takeLock(sql, progress);
    try {
      await ensureBookkeeping(sql);
      const applied = await appliedMigrations(sql);
      const pending = readMigrations(options.folder ?? migrationsFolder).filter((migration) => !applied.has(migration.folderMillis));
      if (pending.length > 0) progress(`${pending.length} migration(s) to apply: ${pending.map((migration) => migration.tag).join(', ')}`);
      for (const migration of pending) {
        const started = Date.now();
        progress(`applying ${migration.tag} (${migration.statements.length} statement(s)${migration.transactional ? ', in one transaction' : ', each on its own'})`);
        await apply(sql, migration, settings, progress, run);
        run.applied.push(migration.tag);
        progress(`applied ${migration.tag} in ${Date.now() - started} ms`);
      }
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`.catch(() => undefined);
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
  return run;
}

async function takeLock(sql: postgres.Sql, progress: (line: string) => void): Promise<void> {
  let waitingSince: number | undefined;
  for (;;) {
    const [{ locked }] = await sql<{ locked: boolean }[]>`select pg_try_advisory_lock(${MIGRATION_LOCK_ID}) as locked`;
    if (locked) return;
    if (waitingSince === undefined || Date.now() - waitingSince >= 10_000) {
      progress('another process is migrating this database; waiting for it to finish');
      waitingSince = Date.now();
    }
    await sleep(250);
  }
}

type Settings = Required<Pick<MigrateOptions, 'lockTimeoutMs' | 'maxAttempts' | 'retryBaseMs'>>;

async function apply(sql: postgres.Sql, migration: Migration, runnerSettings: Settings, progress: (line: string) => void, run: MigrationRun): Promise<void> {
  // A migration may ask for more tries than the runner's (`-- lop-migrate: attempts <n>`), never fewer.
  const settings = { ...runnerSettings, maxAttempts: Math.max(runnerSettings.maxAttempts, migration.attempts ?? 0) };
  // Each migration starts from the runner's limits; a SET in an earlier file does not carry over.
  await sql.unsafe(`set lock_timeout = ${settings.lockTimeoutMs}; set statement_timeout = 0`);
  if (migration.transactional) {
    // One transaction: a retry replays it whole, from a clean rollback.
    let current: MigrationStatement | undefined;
    await withRetry(migration, () => current, settings, progress, run, () =>
      sql.begin(async (tx) => {
        for (const statement of migration.statements) {
          current = statement;
          await tx.unsafe(statement.text);
        }
        current = undefined;
        await recordApplied(tx, migration);
      }),
    );
    return;
  }
  for (const statement of migration.statements) {
    if (statement.backfill) await backfill(sql, migration, statement, settings, progress, run);
    else
      await withRetry(migration, () => statement, settings, progress, run, async () => {
        await dropInvalidIndexLeftBy(sql, statement.text);
        await sql.unsafe(statement.text);
      });
  }
  await withRetry(migration, () => undefined, settings, progress, run, () => sql.begin((tx) => recordApplied(tx, migration)));
}

/** A batched backfill: the statement again and again, each batch committed, until it changes no row. */
async function backfill(sql: postgres.Sql, migration: Migration, statement: MigrationStatement, settings: Settings, progress: (line: string) => void, run: MigrationRun): Promise<void> {
  const started = Date.now();
  let rows = 0;
  let batches = 0;
  let reported = started;
  for (;;) {
    const result = await withRetry(migration, () => statement, settings, progress, run, () => sql.unsafe(statement.text));
    batches += 1;
    rows += result.count;
    if (result.count === 0) break;
    if (Date.now() - reported >= 1_000) {
      progress(`${migration.tag} statement ${statement.ordinal} (backfill of ${tableOf(statement.text) ?? 'rows'}): ${rows.toLocaleString('en-US')} rows in ${batches} batches, ${((Date.now() - started) / 1000).toFixed(1)} s`);
      reported = Date.now();
    }
  }
  progress(`${migration.tag} statement ${statement.ordinal} (backfill): done, ${rows.toLocaleString('en-US')} rows in ${batches - 1} batches`);
}

/**
 * A `CREATE INDEX CONCURRENTLY` that failed (a lock timeout, a crash) leaves an INVALID index of
 * that name behind, which `IF NOT EXISTS` would then take as done: drop it first so the retry builds it.
 */
async function dropInvalidIndexLeftBy(sql: postgres.Sql, statement: string): Promise<void> {
  const name = /create\s+(?:unique\s+)?index\s+concurrently\s+(?:if\s+not\s+exists\s+)?("(?:[^"]|"")+"|[\w$]+)/i.exec(statement.replace(/--.*$/gm, ''))?.[1];
  if (!name) return;
  const bare = name.startsWith('"') ? name.slice(1, -1).replace(/""/g, '"') : name.toLowerCase();
  const [invalid] = await sql<{ invalid: boolean }[]>`
    select true as invalid from pg_index i join pg_class c on c.oid = i.indexrelid
    where c.relname = ${bare} and c.relnamespace = current_schema()::regnamespace and not i.indisvalid`;
  if (invalid) await sql.unsafe(`drop index concurrently if exists "${bare.replace(/"/g, '""')}"`);
}

async function withRetry<T>(
  migration: Migration,
  statement: () => MigrationStatement | undefined,
  settings: Settings,
  progress: (line: string) => void,
  run: MigrationRun,
  work: () => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      const sqlstate = (error as { code?: string }).code;
      const failed = statement();
      const table = (error as { table_name?: string }).table_name || (failed ? tableOf(failed.text) : undefined);
      if (!sqlstate || !RETRIED.has(sqlstate) || attempt >= settings.maxAttempts) throw new MigrationError(migration.tag, failed, sqlstate, table, attempt, error);
      const wait = Math.min(5_000, settings.retryBaseMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
      run.retries += 1;
      progress(
        `${migration.tag}${failed ? ` statement ${failed.ordinal}` : ''}: ${sqlstate === '40P01' ? 'deadlock' : 'lock timeout'}${table ? ` on ${table}` : ''} (SQLSTATE ${sqlstate}); retrying in ${Math.round(wait)} ms (attempt ${attempt + 1} of ${settings.maxAttempts})`,
      );
      await sleep(wait);
    }
  }
}

/** The table a DDL or DML statement works on, for messages. */
export function tableOf(statement: string): string | undefined {
  const text = statement.replace(/--.*$/gm, ' ');
  const match = /\b(?:alter\s+table(?:\s+only)?(?:\s+if\s+exists)?|\bon(?:\s+only)?|update|insert\s+into|delete\s+from|lock\s+table|create\s+table(?:\s+if\s+not\s+exists)?)\s+((?:"[^"]+"|[\w$]+)(?:\.(?:"[^"]+"|[\w$]+))?)/i.exec(text);
  return match?.[1].replace(/"/g, '');
}

const oneLine = (statement: string) => {
  const text = statement.replace(/--.*$/gm, ' ').replace(/\s+/g, ' ').trim();
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
