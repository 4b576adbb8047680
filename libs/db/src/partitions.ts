import type postgres from 'postgres';

/**
 * The mechanics of time-partitioned tables (native declarative partitioning, RANGE on one
 * timestamptz column), for every table that is partitioned by time: creating the partitions a
 * table will need before rows arrive for them, listing them, and detaching and dropping whole old
 * ones instead of deleting rows. Pure SQL mechanics: which tables, how far ahead and how long to
 * keep are the owning module's decisions (events: libs/domain/src/events/partitions.ts).
 *
 * Locks, because these run while partners write:
 * - a partition is made as a plain table first (no lock on the parent beyond reading its columns),
 *   then joined with `ATTACH PARTITION`, which takes SHARE UPDATE EXCLUSIVE on the parent: inserts,
 *   updates and reads go on. (`CREATE TABLE … PARTITION OF` would take ACCESS EXCLUSIVE on the
 *   parent: never used on a live table.)
 * - a partition leaves with `DETACH PARTITION … CONCURRENTLY` (SHARE UPDATE EXCLUSIVE, then waits
 *   for the transactions that could still see it), then `DROP TABLE` of a table no query uses.
 * - every statement waits at most `lockTimeoutMs` for its lock and is retried a few times with
 *   backoff, as the migration runner does (docs/migrations.md).
 *
 * Boundaries are UTC: a month's partition holds [first day 00:00 UTC, next month's first day).
 */

/** `week`: Monday to Monday, as PostgreSQL's date_trunc('week'). */
export type PartitionUnit = 'month' | 'week' | 'day';

export interface PartitionedTable {
  /** The partitioned parent, unqualified (the connection's schema). */
  table: string;
  /** One partition per calendar month (default) or day, UTC. */
  unit?: PartitionUnit;
  /**
   * Statements run on each new, empty partition before it is attached, for what the parent cannot
   * carry: a unique index without the partition key (a partitioned table's unique indexes must
   * include it), e.g. events' primary key on id. `partition` is the new table's quoted name.
   * Indexes defined on the parent need nothing here: ATTACH creates them on the (empty) partition.
   */
  localDdl?: (partition: string, name: string) => string[];
  /** How long each statement waits for a lock before it is retried (default 200 ms, under the API's 500 ms). */
  lockTimeoutMs?: number;
  /** Tries per partition on lock timeout or deadlock (default 5). */
  maxAttempts?: number;
}

export interface PartitionInfo {
  name: string;
  /** Inclusive lower bound; null for MINVALUE or the default partition. */
  from: Date | null;
  /** Exclusive upper bound; null for MAXVALUE or the default partition. */
  to: Date | null;
  isDefault: boolean;
  /** A `DETACH … CONCURRENTLY` that was interrupted: finished by detachPartitionsBefore. */
  detachPending: boolean;
}

/** The start of the period (UTC month or day) that holds `at`. */
export function periodStart(at: Date, unit: PartitionUnit = 'month'): Date {
  if (unit === 'week') return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() - ((at.getUTCDay() + 6) % 7)));
  return unit === 'month' ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)) : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
}

/** The start of the period after the one starting at `start`. */
export function nextPeriod(start: Date, unit: PartitionUnit = 'month'): Date {
  if (unit === 'week') return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + 7));
  return unit === 'month' ? new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1)) : new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + 1));
}

/** `events_p2027_01` (month) or `events_p2027_01_31` (day, and week: its Monday): sorts by time, says its period. */
export function partitionName(table: string, start: Date, unit: PartitionUnit = 'month'): string {
  const [y, m, d] = [start.getUTCFullYear(), start.getUTCMonth() + 1, start.getUTCDate()].map((n) => String(n).padStart(2, '0'));
  return unit === 'month' ? `${table}_p${y}_${m}` : `${table}_p${y}_${m}_${d}`;
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;
const literal = (at: Date) => `'${at.toISOString()}'`;

/** The partitions of `table` with their bounds, oldest first (MINVALUE first, default last). */
export async function listPartitions(sql: postgres.Sql | postgres.TransactionSql, table: string): Promise<PartitionInfo[]> {
  // Bounds as epoch milliseconds: whatever the pool does with timestamps (the project's hands them over as text).
  const rows = await sql<{ name: string; bound: string; from: number | null; to: number | null; detach_pending: boolean }[]>`
    select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound, i.inhdetachpending as detach_pending,
           (extract(epoch from (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM [(]''([^'']*)''[)]'))[1]::timestamptz) * 1000)::float8 as "from",
           (extract(epoch from (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO [(]''([^'']*)''[)]'))[1]::timestamptz) * 1000)::float8 as "to"
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = to_regclass(${quote(table)})`;
  const date = (ms: number | null) => (ms === null ? null : new Date(ms));
  const infos = rows.map((row) => ({ name: row.name, from: date(row.from), to: date(row.to), isDefault: row.bound === 'DEFAULT', detachPending: row.detach_pending }));
  const key = (p: PartitionInfo) => (p.isDefault ? Infinity : (p.from?.getTime() ?? -Infinity));
  return infos.sort((a, b) => key(a) - key(b));
}

/**
 * The upper bound of the newest partition: rows created at or after it have no partition and
 * their insert fails. Undefined when the table has no partitions; null when a MAXVALUE or default
 * partition takes every future row.
 */
export function partitionHorizon(partitions: PartitionInfo[]): Date | null | undefined {
  if (partitions.length === 0) return undefined;
  if (partitions.some((p) => p.isDefault || (p.to === null && !p.detachPending))) return null;
  return new Date(Math.max(...partitions.filter((p) => !p.detachPending).map((p) => p.to!.getTime())));
}

const overlaps = (p: PartitionInfo, from: Date, to: Date) => !p.isDefault && (p.from === null || p.from < to) && (p.to === null || p.to > from);

const RETRIED = new Set(['55P03', '40P01']);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withRetry<T>(attempts: number, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      if (!RETRIED.has((error as { code?: string }).code ?? '') || attempt >= attempts) throw error;
      await sleep(Math.min(2_000, 100 * 2 ** attempt) * (0.5 + Math.random() / 2));
    }
  }
}

/**
 * Makes sure a partition exists for every period that overlaps [from, to): creates and attaches
 * the missing ones, one short transaction each, and returns their names. Idempotent, and safe to
 * run from several processes at once (an advisory lock per table serialises them). A period
 * already covered, even partly, by another partition (a wider legacy one) is left alone.
 */
export async function ensurePartitions(sql: postgres.Sql, spec: PartitionedTable, from: Date, to: Date): Promise<string[]> {
  const unit = spec.unit ?? 'month';
  const created: string[] = [];
  for (let start = periodStart(from, unit); start < to; start = nextPeriod(start, unit)) {
    const end = nextPeriod(start, unit);
    const name = partitionName(spec.table, start, unit);
    const made = await withRetry(spec.maxAttempts ?? 5, () =>
      sql.begin(async (tx) => {
        await tx.unsafe(`set local lock_timeout = ${spec.lockTimeoutMs ?? 200}`);
        await tx`select pg_advisory_xact_lock(hashtext(${`partitions:${spec.table}`}))`;
        // Read under the advisory lock: another process may have just made it.
        if ((await listPartitions(tx, spec.table)).some((p) => overlaps(p, start, end))) return false;
        const [{ exists }] = await tx<{ exists: boolean }[]>`select to_regclass(${quote(name)}) is not null as exists`;
        if (exists) throw new Error(`${name} exists but is not a partition of ${spec.table}: it was left detached (an archive?); attach or rename it before creating the period again`);
        await tx.unsafe(
          `create table ${quote(name)} (like ${quote(spec.table)} including defaults including constraints including storage including comments including generated including identity)`,
        );
        for (const statement of spec.localDdl?.(quote(name), name) ?? []) await tx.unsafe(statement);
        await tx.unsafe(`alter table ${quote(spec.table)} attach partition ${quote(name)} for values from (${literal(start)}) to (${literal(end)})`);
        return true;
      }),
    );
    if (made) created.push(name);
  }
  return created;
}

export interface DetachOptions {
  /** Drop each partition once detached (default); false leaves it as a plain table, e.g. to archive it first. */
  drop?: boolean;
  lockTimeoutMs?: number;
  maxAttempts?: number;
}

/**
 * Detaches (and by default drops) every partition whose whole range lies before `before`, oldest
 * first, and returns their names. `DETACH … CONCURRENTLY` cannot run in a transaction and is not
 * allowed while the table has a default partition; one interrupted earlier is finished (FINALIZE).
 * A MINVALUE partition (a legacy one) is detached like any other once its upper bound has passed.
 */
/**
 * Detaches one partition (CONCURRENTLY, or FINALIZE for one interrupted earlier) and drops it,
 * for a caller that decides partition by partition what may go (retention: a partition that still
 * holds a pending delivery stays).
 */
export async function detachPartition(sql: postgres.Sql, table: string, partition: PartitionInfo, options: DetachOptions = {}): Promise<void> {
  const connection = await sql.reserve();
  try {
    await connection.unsafe(`set lock_timeout = ${options.lockTimeoutMs ?? 200}`);
    await withRetry(options.maxAttempts ?? 5, () =>
      connection.unsafe(`alter table ${quote(table)} detach partition ${quote(partition.name)} ${partition.detachPending ? 'finalize' : 'concurrently'}`),
    );
    if (options.drop !== false) await withRetry(options.maxAttempts ?? 5, () => connection.unsafe(`drop table if exists ${quote(partition.name)}`));
  } finally {
    await connection.unsafe('reset lock_timeout').catch(() => undefined);
    connection.release();
  }
}

export async function detachPartitionsBefore(sql: postgres.Sql, table: string, before: Date, options: DetachOptions = {}): Promise<string[]> {
  const old = (await listPartitions(sql, table)).filter((p) => !p.isDefault && p.to !== null && p.to <= before);
  const detached: string[] = [];
  const connection = await sql.reserve();
  try {
    await connection.unsafe(`set lock_timeout = ${options.lockTimeoutMs ?? 200}`);
    for (const partition of old) {
      await withRetry(options.maxAttempts ?? 5, () =>
        connection.unsafe(`alter table ${quote(table)} detach partition ${quote(partition.name)} ${partition.detachPending ? 'finalize' : 'concurrently'}`),
      );
      if (options.drop !== false) await withRetry(options.maxAttempts ?? 5, () => connection.unsafe(`drop table if exists ${quote(partition.name)}`));
      detached.push(partition.name);
    }
  } finally {
    await connection.unsafe('reset lock_timeout').catch(() => undefined);
    connection.release();
  }
  return detached;
}
