/**
 * A real PostgreSQL streaming replica for tests and benches, made from the embedded PostgreSQL the
 * project already runs (no extra install: the npm binaries have no pg_basebackup, so the base
 * backup is PostgreSQL's low-level one — `pg_backup_start()`, a file copy, `pg_backup_stop()` —
 * plus `standby.signal` and `primary_conninfo`, exactly what `pg_basebackup -R` would write).
 *
 *   const pair = await startReplicaPair();          // a fresh primary and one replica streaming from it
 *   const db = await createTestDatabase(pair.primaryUrl);   // replayed on the replica too
 *   pair.onReplica(db.url);                          // the same database's URL on the replica
 *   await pair.pauseReplay();  …  await pair.resumeReplay(); await pair.waitForReplay();
 *   await pair.lag();                               // { bytes, seconds, … } (readReplicaLag; opens two
 *                                                   // connections: to sample often, call readReplicaLag with your own pools)
 *   await pair.stopReplica();                       // the replica gone, the primary still up
 *   await pair.stop();                              // both, and their folders
 *
 * `startStreamingReplica(primary)` adds a replica to any embedded primary whose data folder is on
 * this machine. Meant to be shared: the read-replica tests use it, and a bench measuring replica lag
 * under load can start the same pair (import from `@lop/db/testing/replica`). As root, both servers
 * run as the `postgres` OS user (see embedded.ts); their folders are made traversable for it.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, copyFileSync, lstatSync, rmSync, appendFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { embeddedUrl, ensureEmbeddedPostgres, type EmbeddedPostgresHandle } from '../embedded';
import { freePort } from '../free-port';
import { readReplicaLag, type ReplicaLag } from '../replica-lag';
import { withDatabase } from '../test-database';

export interface EmbeddedServer {
  /** URL of the server's `postgres` database. */
  url: string;
  /** Its data folder, on this machine. */
  dataDir: string;
  port: number;
  stop(): Promise<void>;
}

export interface StreamingReplica extends EmbeddedServer {
  /** The primary it streams from. */
  primary: EmbeddedServer;
  /** `database`'s URL on the replica, or any URL of the primary rewritten to the replica's address. */
  onReplica(databaseOrPrimaryUrl: string): string;
  /** `pg_wal_replay_pause()`: the replica keeps receiving WAL but shows nothing newer until resumed. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Waits until the replica has replayed everything the primary had written when called. */
  waitForReplay(timeoutMs?: number): Promise<void>;
  /** Its lag behind the primary now, in bytes and seconds. */
  lag(): Promise<ReplicaLag>;
  /** Stops the replica's server only (a replica that is down); its folder and slot stay until stop(). Idempotent. */
  stopReplica(): Promise<void>;
}

export interface ReplicaPair extends StreamingReplica {
  primaryUrl: string;
  replicaUrl: string;
}

type Log = (line: string) => void;

export interface ReplicaOptions {
  log?: Log;
  /** Extra settings of the replica (postgresql.auto.conf), e.g. `{ max_standby_streaming_delay: '0' }` to provoke recovery conflicts. */
  settings?: Record<string, string>;
}

function makeFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(folder, 0o755);
  return folder;
}

function serverOf(handle: EmbeddedPostgresHandle, dataDir: string, port: number): EmbeddedServer {
  return { url: handle.url, dataDir, port, stop: () => handle.stop() };
}

/** A fresh embedded cluster (wal_level=replica is PostgreSQL's default) in a temporary folder. */
export async function startEmbeddedPrimary(options: { log?: Log } = {}): Promise<EmbeddedServer> {
  const folder = makeFolder('lop-primary-');
  const dataDir = join(folder, 'postgres');
  const port = await freePort();
  const handle = await ensureEmbeddedPostgres({ dataDir, port, log: options.log });
  return {
    ...serverOf(handle, dataDir, port),
    stop: async () => {
      await handle.stop();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

// Never copied from a running server (PostgreSQL's "Making a base backup using the low level API").
const SKIPPED = new Set(['postmaster.pid', 'postmaster.opts', 'pg_wal', 'pg_replslot', 'pg_stat_tmp', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_subtrans']);

/** Copies a live data folder: files may vanish while it runs (temporary files), which is no error. */
function copyLive(from: string, to: string, top = true): void {
  mkdirSync(to, { recursive: true, mode: 0o700 });
  let entries: string[];
  try {
    entries = readdirSync(from);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  for (const entry of entries) {
    const source = join(from, entry);
    const target = join(to, entry);
    if (top && SKIPPED.has(entry)) {
      // Their folders must exist, empty; the files (postmaster.pid, .opts) must not.
      if (lstatSync(source).isDirectory()) mkdirSync(target, { mode: 0o700 });
      continue;
    }
    try {
      if (lstatSync(source).isDirectory()) copyLive(source, target, false);
      else copyFileSync(source, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}

const quote = (value: string) => `'${value.replace(/'/g, "''")}'`;

/**
 * A streaming replica of `primary`, on a free port: a physical replication slot keeps the WAL it
 * needs from the backup's start, and the replica streams from it (hot standby: it answers reads).
 */
export async function startStreamingReplica(primary: EmbeddedServer, options: ReplicaOptions = {}): Promise<StreamingReplica> {
  const folder = makeFolder('lop-replica-');
  const dataDir = join(folder, 'postgres');
  const slot = `lop_replica_${process.pid}_${Date.now().toString(36)}`;
  try {
    return await startReplicaIn(primary, folder, dataDir, slot, options);
  } catch (error) {
    // Nothing left behind: no folder, no slot holding the primary's WAL.
    await dropSlot(primary, slot);
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
}

async function dropSlot(primary: EmbeddedServer, slot: string): Promise<void> {
  const sql = postgres(primary.url, { max: 1, onnotice: () => undefined, connect_timeout: 2 });
  try {
    // A replica just stopped may still show as streaming for a moment: an active slot cannot be dropped.
    for (let tries = 0; tries < 50; tries++) {
      const [left] = await sql<{ active: boolean }[]>`select active from pg_replication_slots where slot_name = ${slot}`;
      if (!left) return;
      if (!left.active) await sql`select pg_drop_replication_slot(${slot})`.catch(() => undefined);
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch {
    // The primary is gone: so is the WAL the slot held.
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function startReplicaIn(primary: EmbeddedServer, folder: string, dataDir: string, slot: string, options: ReplicaOptions): Promise<StreamingReplica> {
  const admin = postgres(primary.url, { max: 1, onnotice: () => undefined });
  try {
    await admin`select pg_create_physical_replication_slot(${slot}, true)`;
    // One session from start to stop (a non-exclusive backup belongs to its session).
    await admin.begin(async (session) => {
      await session`select pg_backup_start(${slot}, true)`;
      copyLive(primary.dataDir, dataDir);
      const [stop] = await session<{ labelfile: string; spcmapfile: string | null }[]>`select labelfile, spcmapfile from pg_backup_stop(false)`;
      writeFileSync(join(dataDir, 'backup_label'), stop.labelfile);
      if (stop.spcmapfile) writeFileSync(join(dataDir, 'tablespace_map'), stop.spcmapfile);
    });
  } finally {
    await admin.end({ timeout: 5 });
  }
  mkdirSync(join(dataDir, 'pg_wal', 'archive_status'), { recursive: true, mode: 0o700 });
  writeFileSync(join(dataDir, 'standby.signal'), '');
  const conninfo = `host=127.0.0.1 port=${primary.port} user=postgres password=postgres application_name=${slot}`;
  const extra = Object.entries(options.settings ?? {}).map(([name, value]) => `${name} = ${quote(value)}\n`).join('');
  appendFileSync(join(dataDir, 'postgresql.auto.conf'), `\nprimary_conninfo = ${quote(conninfo)}\nprimary_slot_name = ${quote(slot)}\nhot_standby = on\n${extra}`);
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', folder]);
  chmodSync(dataDir, 0o700);

  const port = await freePort();
  const handle = await ensureEmbeddedPostgres({ dataDir, port, log: options.log });
  const url = embeddedUrl(port);
  const onReplica = (databaseOrPrimaryUrl: string) => {
    if (!databaseOrPrimaryUrl.includes('://')) return withDatabase(url, databaseOrPrimaryUrl);
    const parsed = new URL(databaseOrPrimaryUrl);
    parsed.port = String(port);
    return parsed.toString();
  };
  const onBoth = async <T>(run: (replica: postgres.Sql, primary: postgres.Sql) => Promise<T>): Promise<T> => {
    const replicaSql = postgres(url, { max: 1, onnotice: () => undefined });
    const primarySql = postgres(primary.url, { max: 1, onnotice: () => undefined });
    try {
      return await run(replicaSql, primarySql);
    } finally {
      await Promise.all([replicaSql.end({ timeout: 5 }), primarySql.end({ timeout: 5 })]);
    }
  };
  let stopped = false;
  const stopReplica = async () => {
    if (stopped) return;
    stopped = true;
    await handle.stop();
  };
  return {
    url,
    dataDir,
    port,
    primary,
    onReplica,
    pauseReplay: () => onBoth(async (replica) => void (await replica`select pg_wal_replay_pause()`)),
    resumeReplay: () => onBoth(async (replica) => void (await replica`select pg_wal_replay_resume()`)),
    waitForReplay: (timeoutMs = 30_000) =>
      onBoth(async (replica, primarySql) => {
        const [{ lsn }] = await primarySql<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const [{ done }] = await replica<{ done: boolean }[]>`select pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn as done`;
          if (done) return;
          if (Date.now() > deadline) throw new Error(`the replica did not replay up to ${lsn} within ${timeoutMs} ms`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }),
    lag: () => onBoth((replica, primarySql) => readReplicaLag(replica, primarySql)),
    stopReplica,
    stop: async () => {
      await stopReplica();
      // The slot would keep the primary's WAL forever once nobody streams from it.
      await dropSlot(primary, slot);
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** A fresh embedded primary and one streaming replica of it; stop() stops both and removes their folders. */
export async function startReplicaPair(options: ReplicaOptions = {}): Promise<ReplicaPair> {
  const primary = await startEmbeddedPrimary(options);
  try {
    const replica = await startStreamingReplica(primary, options);
    return {
      ...replica,
      primaryUrl: primary.url,
      replicaUrl: replica.url,
      stop: async () => {
        await replica.stop();
        await primary.stop();
      },
    };
  } catch (error) {
    await primary.stop();
    throw error;
  }
}
