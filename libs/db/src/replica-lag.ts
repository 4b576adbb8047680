import type { Sql } from './client';

/**
 * How far a streaming replica is behind its primary. Bytes are the primary's WAL position minus
 * what the replica has replayed (clock-free); seconds are the age of the last transaction the
 * replica replayed, and 0 when it has replayed everything the primary wrote (an idle primary is not
 * lag). The seconds compare the replica's clock with the primary's commit timestamps: an
 * operational measure, never used to decide what a partner may read.
 */
export interface ReplicaLag {
  /** WAL bytes the replica still has to replay (0 when caught up). */
  bytes: number;
  /** Seconds since the newest transaction the replica replayed was committed, 0 when caught up. */
  seconds: number;
  /** The replica's replay position, e.g. `0/3000148`. */
  replayLsn: string;
  /** The primary's current WAL position. */
  primaryLsn: string;
  /** True while replay is paused (`pg_wal_replay_pause()`). */
  replayPaused: boolean;
}

/**
 * Reads a replica's lag against its primary: one query on each (the primary's position first, so a
 * replica that replays meanwhile can only look less behind than it was, never more). Throws when
 * the replica is not a standby (`pg_is_in_recovery()` false): a promoted or misconfigured replica
 * is not lag. The API's replica monitor checks each replica with it; the replica test harness's
 * lag() measures with it too (testing/replica.ts).
 */
export async function readReplicaLag(replica: Sql, primary: Sql): Promise<ReplicaLag> {
  const [{ primary_lsn: primaryLsn }] = await primary<{ primary_lsn: string }[]>`select pg_current_wal_lsn()::text as primary_lsn`;
  const [row] = await replica<{ in_recovery: boolean; replay_lsn: string | null; bytes: string | null; age: number | null; paused: boolean }[]>`
    select pg_is_in_recovery() as in_recovery,
           pg_last_wal_replay_lsn()::text as replay_lsn,
           greatest(${primaryLsn}::pg_lsn - pg_last_wal_replay_lsn(), 0)::text as bytes,
           extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp())::float8 as age,
           case when pg_is_in_recovery() then pg_is_wal_replay_paused() else false end as paused`;
  if (!row.in_recovery || row.replay_lsn === null) throw new Error('not a streaming replica: pg_is_in_recovery() is false');
  const bytes = Number(row.bytes ?? 0);
  return { bytes, seconds: bytes === 0 ? 0 : Math.max(0, row.age ?? 0), replayLsn: row.replay_lsn, primaryLsn, replayPaused: row.paused };
}
