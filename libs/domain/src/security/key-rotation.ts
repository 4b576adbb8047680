import { setTimeout as sleep } from 'node:timers/promises';
import type { Sql } from '@lop/db';
import { LEGACY_KEY_VERSION, type DataProtector, type KeyringEntry } from './protector';

/**
 * Online rotation of the data keys that encrypt personal data at rest (docs/operations.md § Key and
 * secret rotation). Every encryption admin operation lives here, so a control-plane audit record
 * can be written in one place.
 *
 * - The keyring (`encryption_keys`) holds data keys wrapped by the master key; version 1 is the key
 *   derived from the master key (what every release before rotation wrote, `v1.…`).
 * - `rotate` adds a version; processes reload the keyring on NOTIFY (and every `refreshMs` as a
 *   backstop) and write with it from then on.
 * - Each protected table has `key_version`, set by a trigger from the stored text itself (also for
 *   rows the previous release writes), with a foreign key to the keyring: retiring (deleting) a
 *   version fails while any row names it, including a row whose insert is in flight, so a process
 *   that has not heard of a rotation yet can never leave a row the keyring cannot read.
 * - The re-encryption job finds rows of older versions by index, in short keyset batches.
 */

/** NOTIFY channel: the keyring changed (rotate, retire). */
export const KEYRING_CHANNEL = 'lop_encryption_keyring';

/** Every column that holds text sealed by the DataProtector. A new one belongs here, with its trigger and foreign key (migrations). */
export const PROTECTED_COLUMNS = [
  // Patient, ordering provider, AOE answers, clinical notes (orders/orders.ts).
  { table: 'orders', column: 'protected_data' },
  // Webhook signing secrets (webhooks/subscriptions.ts).
  { table: 'webhook_subscriptions', column: 'secret_protected' },
] as const;
export type ProtectedTable = (typeof PROTECTED_COLUMNS)[number]['table'];

/** One runner of the re-encryption job at a time, across worker replicas (a session lock: freed when its process dies). */
const REENCRYPTION_LOCK = 'lop:key-rotation:reencrypt';

const hasCode = (error: unknown, code: string) => (error as { code?: string } | null)?.code === code;

/** The keyring's rows, or undefined on a schema before the keyring (a rollback to the previous release's migrations). */
export async function readKeyring(sql: Sql): Promise<KeyringEntry[] | undefined> {
  try {
    const rows = await sql<{ version: number; wrapped_key: string | null }[]>`select version, wrapped_key from encryption_keys order by version`;
    return rows.map((row) => ({ version: row.version, wrappedKey: row.wrapped_key }));
  } catch (error) {
    if (hasCode(error, '42P01')) return undefined;
    throw error;
  }
}

/** Loads the keyring into the protector; throws when a key cannot be unwrapped (another master key). */
export async function loadKeyring(sql: Sql, protector: DataProtector): Promise<void> {
  const { unreadable } = protector.installKeyring((await readKeyring(sql)) ?? []);
  if (unreadable.length > 0) throw unreadable[0].error;
}

export interface KeyringWatch {
  refresh(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Keeps the protector's keyring current: loaded now, reloaded on every NOTIFY of a change and on
 * each reconnect of the listener, and every `refreshMs` in case a notification was missed.
 */
export async function watchKeyring(sql: Sql, protector: DataProtector, options: { refreshMs?: number; onError?: (error: Error) => void } = {}): Promise<KeyringWatch> {
  const onError = options.onError ?? (() => undefined);
  let started = 0;
  let installed = 0;
  // Queries on a pool may finish out of order: only a reload started later than the one installed replaces it.
  const refresh = async () => {
    const ticket = ++started;
    const entries = (await readKeyring(sql)) ?? [];
    if (ticket < installed) return;
    installed = ticket;
    for (const { error } of protector.installKeyring(entries).unreadable) onError(error);
  };
  const quietly = () => void refresh().catch((error: unknown) => onError(error as Error));
  await refresh();
  protector.setKeyringRefresher(refresh);
  const listener = await sql.listen(KEYRING_CHANNEL, quietly, quietly);
  const timer = setInterval(quietly, options.refreshMs ?? 30_000);
  timer.unref();
  return {
    refresh,
    close: async () => {
      clearInterval(timer);
      protector.setKeyringRefresher(undefined);
      await listener.unlisten().catch(() => undefined);
    },
  };
}

/** An encryption admin operation refused, with the reason (exit code 2 in the admin CLI). */
export class KeyRotationRefused extends Error {
  override name = 'KeyRotationRefused';
}

/**
 * Writes the change's audit record in the change's own transaction (control-plane/ passes the
 * audit trail's, which sits above this module): the change commits with its record or not at all.
 */
export type RecordKeyChange = (tx: Sql, change: { action: 'encryption.rotate' | 'encryption.retire'; version: number; current_version: number }) => Promise<void>;

/** Adds a key version; new writes use it as soon as each process hears (NOTIFY, within milliseconds). */
export async function rotateEncryptionKey(sql: Sql, protector: DataProtector, record?: RecordKeyChange): Promise<{ version: number; previous: number }> {
  // A key wrapped under another master key would be unreadable by every other process.
  await loadKeyring(sql, protector);
  return sql.begin(async (tx) => {
    await tx`set local lock_timeout = '5s'`;
    await tx`select pg_advisory_xact_lock(hashtext(${KEYRING_CHANNEL}))`;
    const [{ previous }] = await tx<{ previous: number }[]>`select coalesce(max(version), 1)::int as previous from encryption_keys`;
    const version = previous + 1;
    await tx`insert into encryption_keys (version, wrapped_key) values (${version}, ${protector.newWrappedKey(version)})`;
    await tx`select pg_notify(${KEYRING_CHANNEL}, ${String(version)})`;
    await record?.(tx as unknown as Sql, { action: 'encryption.rotate', version, current_version: version });
    return { version, previous };
  });
}

export interface KeyVersionStatus {
  version: number;
  current: boolean;
  created_at: string;
  /** Rows per protected table sealed with this version. Version 1 includes rows written before the keyring (not yet labelled). */
  rows: Record<ProtectedTable, number>;
}

export interface EncryptionStatus {
  current_version: number;
  versions: KeyVersionStatus[];
  /** The re-encryption job's progress towards the current version. */
  job: {
    target_version: number;
    reencrypted_rows: number;
    /** Rows still sealed with an older version, per table. */
    remaining: Record<ProtectedTable, number>;
    last_batch_at: string | null;
    /** When a run last found nothing left to re-encrypt (null while rows remain). */
    done_at: string | null;
  };
}

/** Timestamps arrive as Date or text depending on the connection's type parsers. */
const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

type CountsByVersion = Map<number, Record<ProtectedTable, number>>;

async function countByVersion(sql: Sql): Promise<CountsByVersion> {
  const counts: CountsByVersion = new Map();
  const add = (version: number, table: ProtectedTable, n: number) => {
    const entry = counts.get(version) ?? { orders: 0, webhook_subscriptions: 0 };
    entry[table] += n;
    counts.set(version, entry);
  };
  for (const { table, column } of PROTECTED_COLUMNS) {
    // Index-only scans (orders_key_version_idx, orders_unlabelled_protected_idx).
    const rows = await sql<{ version: number | null; n: number }[]>`
      select key_version as version, count(*)::bigint as n from ${sql(table)} where key_version is not null group by key_version
      union all
      select null, count(*)::bigint from ${sql(table)} where key_version is null and ${sql(column)} is not null`;
    for (const row of rows) add(row.version ?? LEGACY_KEY_VERSION, table, Number(row.n));
  }
  return counts;
}

/** Rows per key version per table, and the re-encryption job's progress. */
export async function encryptionStatus(sql: Sql): Promise<EncryptionStatus> {
  const keys = await sql<{ version: number; created_at: Date | string; reencrypted_rows: string; reencrypt_last_batch_at: Date | string | null; reencrypt_done_at: Date | string | null }[]>`
    select version, created_at, reencrypted_rows, reencrypt_last_batch_at, reencrypt_done_at from encryption_keys order by version`;
  if (keys.length === 0) throw new KeyRotationRefused('the keyring is empty: run `npm run migrate` with this release first');
  const counts = await countByVersion(sql);
  const current = keys[keys.length - 1];
  const none = () => ({ orders: 0, webhook_subscriptions: 0 });
  const remaining = none();
  for (const [version, rows] of counts) {
    if (version === current.version) continue;
    for (const { table } of PROTECTED_COLUMNS) remaining[table] += rows[table];
  }
  return {
    current_version: current.version,
    versions: keys.map((key) => ({ version: key.version, current: key === current, created_at: iso(key.created_at)!, rows: counts.get(key.version) ?? none() })),
    job: {
      target_version: current.version,
      reencrypted_rows: Number(current.reencrypted_rows),
      remaining,
      last_batch_at: iso(current.reencrypt_last_batch_at),
      done_at: iso(current.reencrypt_done_at),
    },
  };
}

/** Rows per table sealed with `version` (by index; version 1 includes rows not yet labelled). */
async function countForVersion(sql: Sql, version: number): Promise<Record<ProtectedTable, number>> {
  const rows = { orders: 0, webhook_subscriptions: 0 };
  for (const { table, column } of PROTECTED_COLUMNS) {
    const [{ n }] = await sql<{ n: string }[]>`
      select (select count(*) from ${sql(table)} where key_version = ${version})
        + ${version === LEGACY_KEY_VERSION ? sql`(select count(*) from ${sql(table)} where key_version is null and ${sql(column)} is not null)` : sql`0`} as n`;
    rows[table] = Number(n);
  }
  return rows;
}

const describeCounts = (rows: Record<ProtectedTable, number>) =>
  PROTECTED_COLUMNS.map(({ table }) => `${table} ${rows[table]}`).join(', ');

/**
 * Retires (deletes) an old key version once no row needs it. Never the current version. Refused,
 * naming the counts, while rows still use it; a row written with it meanwhile (a process that had
 * not heard of the rotation) makes the delete fail on the foreign key, and is refused the same way.
 */
export async function retireEncryptionKey(sql: Sql, version: number, record?: RecordKeyChange): Promise<{ version: number; current_version: number }> {
  const refuseForRows = (rows: Record<ProtectedTable, number>) =>
    new KeyRotationRefused(
      `key version ${version} is still needed by ${describeCounts(rows)} row(s); wait until the re-encryption job has moved them (admin encryption status), then retire it`,
    );
  try {
    return await sql.begin(async (tx) => {
      await tx`set local lock_timeout = '5s'`;
      await tx`select pg_advisory_xact_lock(hashtext(${KEYRING_CHANNEL}))`;
      const keys = await tx<{ version: number }[]>`select version from encryption_keys order by version`;
      const current = keys.at(-1)?.version ?? LEGACY_KEY_VERSION;
      if (version === current) throw new KeyRotationRefused(`key version ${version} is the current key: new writes use it. Rotate first (admin encryption rotate), then retire the older one`);
      if (!keys.some((key) => key.version === version)) throw new KeyRotationRefused(`no key version ${version} in the keyring (never added, or already retired); versions: ${keys.map((k) => k.version).join(', ')}`);
      const rows = await countForVersion(tx as unknown as Sql, version);
      if (PROTECTED_COLUMNS.some(({ table }) => rows[table] > 0)) throw refuseForRows(rows);
      // The foreign keys from each protected table check (and wait for) rows written meanwhile.
      await tx`delete from encryption_keys where version = ${version}`;
      await tx`select pg_notify(${KEYRING_CHANNEL}, ${`retired:${version}`})`;
      await record?.(tx as unknown as Sql, { action: 'encryption.retire', version, current_version: current });
      return { version, current_version: current };
    });
  } catch (error) {
    if (hasCode(error, '23503')) throw refuseForRows(await countForVersion(sql, version));
    throw error;
  }
}

export interface ReencryptOptions {
  /** Rows per batch (each batch is one short transaction). */
  batchSize?: number;
  /** Pause between batches, to bound the load on the database. */
  pauseMs?: number;
  signal?: AbortSignal;
  onBatch?: (batch: { table: ProtectedTable; rows: number }) => void;
}

export interface ReencryptOutcome {
  target_version: number;
  reencrypted: number;
  /** Rows that could not be decrypted (corrupt, or sealed under another master key): left as they are and reported. */
  unreadable: number;
}

/**
 * One batch: the next `limit` rows after `after` (by id) sealed with `from` (null: written before
 * the keyring, not yet labelled), re-encrypted with the current version. Row locks are taken with
 * SKIP LOCKED (a partner's or laboratory's transaction on a row is never waited for; the row is
 * picked up by the next pass), and the update only replaces the exact text that was read, so a
 * newer value written meanwhile is never overwritten with a re-encryption of the older one.
 */
async function reencryptBatch(
  sql: Sql,
  protector: DataProtector,
  target: { table: ProtectedTable; column: string },
  from: number | null,
  after: string,
  limit: number,
): Promise<{ seen: number; last: string; updated: number; unreadable: number }> {
  const { table, column } = target;
  return sql.begin(async (tx) => {
    await tx`set local lock_timeout = '1s'`;
    const rows = await tx<{ id: string; stored: string }[]>`
      select id, ${tx(column)} as stored from ${tx(table)}
      where ${from === null ? tx`key_version is null and ${tx(column)} is not null` : tx`key_version = ${from}`} and id > ${after}
      order by id limit ${limit}
      for no key update skip locked`;
    const ids: string[] = [];
    const olds: string[] = [];
    const news: string[] = [];
    let unreadable = 0;
    for (const row of rows) {
      try {
        const value = await protector.open(row.stored);
        ids.push(row.id);
        olds.push(row.stored);
        news.push(protector.encrypt(value));
      } catch {
        unreadable += 1;
      }
    }
    let updated = 0;
    if (ids.length > 0) {
      const result = await tx`
        update ${tx(table)} as t set ${tx(column)} = v.sealed
        from unnest(${ids}::uuid[], ${olds}::text[], ${news}::text[]) as v(id, old, sealed)
        where t.id = v.id and t.${tx(column)} = v.old`;
      updated = result.count;
      await tx`update encryption_keys set reencrypted_rows = reencrypted_rows + ${updated}, reencrypt_last_batch_at = now()
        where version = ${protector.currentKeyVersion}`;
    }
    return { seen: rows.length, last: rows.at(-1)?.id ?? after, updated, unreadable };
  });
}

/**
 * Re-encrypts every row sealed with an older version than the current one, pass after pass until a
 * pass finds nothing to do: rows skipped because they were locked, and rows the previous release
 * (or a process that had not heard of the rotation yet) wrote with an older version after a pass
 * went by, are taken by the next pass. Resumable by construction: what is left is found by index.
 */
export async function reencryptAll(sql: Sql, protector: DataProtector, options: ReencryptOptions = {}): Promise<ReencryptOutcome> {
  const batchSize = options.batchSize ?? 500;
  await loadKeyring(sql, protector);
  const keys = await sql<{ version: number }[]>`select version from encryption_keys order by version`;
  const target = keys.at(-1)?.version ?? LEGACY_KEY_VERSION;
  // This process must hold the current key, or it would "re-encrypt" to an older one.
  if (protector.currentKeyVersion !== target) throw new Error(`this process does not hold the current encryption key version ${target}`);
  const outcome: ReencryptOutcome = { target_version: target, reencrypted: 0, unreadable: 0 };
  // Before the first rotation every row is version 1 already (labelled or not): nothing to move.
  if (target === LEGACY_KEY_VERSION) return outcome;
  const older = [null, ...keys.map((k) => k.version).filter((v) => v < target)];
  for (;;) {
    let pass = 0;
    let unreadable = 0;
    for (const column of PROTECTED_COLUMNS) {
      for (const from of older) {
        let after = '00000000-0000-0000-0000-000000000000';
        for (;;) {
          if (options.signal?.aborted) return outcome;
          const batch = await reencryptBatch(sql, protector, column, from, after, batchSize);
          pass += batch.updated;
          unreadable += batch.unreadable;
          if (batch.updated > 0) options.onBatch?.({ table: column.table, rows: batch.updated });
          after = batch.last;
          if (batch.seen < batchSize) break;
          if (options.pauseMs) await sleep(options.pauseMs);
        }
      }
    }
    outcome.reencrypted += pass;
    outcome.unreadable = unreadable;
    if (pass === 0) break;
  }
  const status = await encryptionStatus(sql);
  const left = PROTECTED_COLUMNS.reduce((n, { table }) => n + status.job.remaining[table], 0);
  await sql`update encryption_keys set reencrypt_done_at = ${left === 0 ? sql`coalesce(reencrypt_done_at, now())` : null} where version = ${target}`;
  return outcome;
}

export interface ReencryptionJob {
  /** Runs at once (rather than at the next wake-up); resolves when this run ends. */
  runNow(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The re-encryption job of the delivery worker: runs when the keyring changes (NOTIFY) and every
 * `pollMs` (rows the previous release writes in the old format during a rollout, rows skipped as
 * locked). One runner at a time across replicas: a session advisory lock, which PostgreSQL frees
 * the moment the process holding it dies, so a restarted or other worker resumes at once.
 */
export async function startReencryptionJob(
  sql: Sql,
  protector: DataProtector,
  options: ReencryptOptions & { pollMs?: number; onRun?: (outcome: ReencryptOutcome) => void; onError?: (error: Error) => void } = {},
): Promise<ReencryptionJob> {
  const abort = new AbortController();
  let running: Promise<void> | undefined;
  let again = false;
  const runOnce = async () => {
    const reserved = await sql.reserve();
    try {
      const [{ locked }] = await reserved<{ locked: boolean }[]>`select pg_try_advisory_lock(hashtext(${REENCRYPTION_LOCK})) as locked`;
      if (!locked) return;
      try {
        const outcome = await reencryptAll(sql, protector, { ...options, signal: abort.signal });
        if (outcome.reencrypted > 0 || outcome.unreadable > 0) options.onRun?.(outcome);
      } finally {
        await reserved`select pg_advisory_unlock(hashtext(${REENCRYPTION_LOCK}))`;
      }
    } finally {
      reserved.release();
    }
  };
  const run = (): Promise<void> => {
    if (abort.signal.aborted) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = runOnce()
      .catch((error: unknown) => {
        // A schema before the keyring: nothing to do until the migration runs.
        if (!hasCode(error, '42P01') && !hasCode(error, '42703')) options.onError?.(error as Error);
      })
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          void run();
        }
      });
    return running;
  };
  const listener = await sql.listen(KEYRING_CHANNEL, () => void run(), () => void run());
  const timer = setInterval(() => void run(), options.pollMs ?? 60_000);
  timer.unref();
  return {
    runNow: run,
    close: async () => {
      abort.abort();
      clearInterval(timer);
      await listener.unlisten().catch(() => undefined);
      await running;
    },
  };
}
