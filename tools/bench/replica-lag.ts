import postgres from 'postgres';

export type ReplicaLag =
  | {
      measured: true;
      seconds: number;
      /** WAL the primary wrote a second during the load. */
      walBytesPerSecond: number;
      /** Bytes of WAL the replica had not replayed: primary's pg_current_wal_lsn() − replica's pg_last_wal_replay_lsn(). */
      lagBytes: { p50: number; p99: number; max: number };
      /** now() − pg_last_xact_replay_timestamp() on the replica, while writes flow. */
      lagSeconds: { p50: number; p99: number; max: number };
      samples: number;
    }
  | { measured: false; reason: string };

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]);

/**
 * Replica lag under a write load: while `writeLoad` runs against the primary, samples every
 * `everyMs` how far the replica's replay is behind, in bytes of WAL (the primary's current LSN
 * minus the replica's last replayed LSN) and in seconds (the age of the last replayed commit,
 * meaningful only while commits flow). Without a replica it reports why it was not measured.
 */
export async function measureReplicaLag(options: {
  say: (line: string) => void;
  replica?: { primaryUrl: string; replicaUrl: string };
  writeLoad?: () => Promise<unknown>;
  everyMs?: number;
  /** Why no replica was given, for the report. */
  reason?: string;
}): Promise<ReplicaLag> {
  if (!options.replica || !options.writeLoad) {
    return { measured: false, reason: options.reason ?? 'no streaming replica available to this run' };
  }
  const primary = postgres(options.replica.primaryUrl, { max: 1, onnotice: () => undefined });
  const replica = postgres(options.replica.replicaUrl, { max: 1, onnotice: () => undefined });
  try {
    const bytes: number[] = [];
    const seconds: number[] = [];
    let running = true;
    const [{ lsn: startLsn }] = await primary<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
    const started = performance.now();
    const sampler = (async () => {
      while (running) {
        const [{ lsn }] = await primary<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
        const [row] = await replica<{ behind: number | null; age: number | null }[]>`
          select pg_wal_lsn_diff(${lsn}::pg_lsn, pg_last_wal_replay_lsn())::float8 as behind,
                 extract(epoch from now() - pg_last_xact_replay_timestamp())::float8 as age`;
        if (row.behind !== null) bytes.push(Math.max(0, row.behind));
        if (row.age !== null) seconds.push(Math.max(0, row.age));
        await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 100));
      }
    })();
    await options.writeLoad().finally(() => (running = false));
    await sampler;
    const elapsed = (performance.now() - started) / 1000;
    const [{ written }] = await primary<{ written: number }[]>`select pg_wal_lsn_diff(pg_current_wal_lsn(), ${startLsn}::pg_lsn)::float8 as written`;
    bytes.sort((a, b) => a - b);
    seconds.sort((a, b) => a - b);
    const summary = (values: number[], digits: number) => ({
      p50: Number(percentile(values, 0.5).toFixed(digits)),
      p99: Number(percentile(values, 0.99).toFixed(digits)),
      max: Number((values.at(-1) ?? 0).toFixed(digits)),
    });
    const result: ReplicaLag = {
      measured: true,
      seconds: Number(elapsed.toFixed(1)),
      walBytesPerSecond: Math.round(written / elapsed),
      lagBytes: summary(bytes, 0),
      lagSeconds: summary(seconds, 3),
      samples: bytes.length,
    };
    options.say(`  replica lag: p50 ${result.lagBytes.p50} bytes / ${result.lagSeconds.p50} s, p99 ${result.lagBytes.p99} bytes / ${result.lagSeconds.p99} s at ${result.walBytesPerSecond} WAL bytes/s`);
    return result;
  } finally {
    await primary.end({ timeout: 1 });
    await replica.end({ timeout: 1 });
  }
}
