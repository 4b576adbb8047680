import { readReplicaLag, type Sql } from '@lop/db';

export type ReplicaLagFigures =
  | {
      measured: true;
      seconds: number;
      /** Orders created a second by the write load, and the WAL the primary wrote a second meanwhile. */
      ordersPerSecond: number;
      walBytesPerSecond: number;
      /** WAL the replica had not replayed yet (the primary's pg_current_wal_lsn() − the replica's pg_last_wal_replay_lsn()). */
      lagBytes: { p50: number; p99: number; max: number };
      /** Age of the last transaction the replica replayed (0 when caught up), while writes flow. */
      lagSeconds: { p50: number; p99: number; max: number };
      samples: number;
      /** How long the replica took, after the load, to replay everything. */
      catchUpSeconds: number;
    }
  | { measured: false; reason: string };

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]);

/**
 * Replica lag under a write load: while `writeLoad` runs against the primary, samples every
 * `everyMs` how far the replica is behind (readReplicaLag, the API's own replica monitor's measure:
 * bytes of WAL not replayed yet, and the age of the last replayed commit).
 */
export async function measureReplicaLag(options: {
  primary: Sql;
  replica: Sql;
  writeLoad: () => Promise<{ orders: number }>;
  everyMs?: number;
  say: (line: string) => void;
}): Promise<ReplicaLagFigures> {
  const { primary, replica } = options;
  const bytes: number[] = [];
  const seconds: number[] = [];
  let running = true;
  const lsn = async () => (await primary<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`)[0].lsn;
  const startLsn = await lsn();
  const started = performance.now();
  const sampler = (async () => {
    while (running) {
      const lag = await readReplicaLag(replica, primary);
      bytes.push(lag.bytes);
      seconds.push(lag.seconds);
      await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 100));
    }
  })();
  const { orders } = await options.writeLoad().finally(() => (running = false));
  await sampler;
  const elapsed = (performance.now() - started) / 1000;
  const [{ written }] = await primary<{ written: number }[]>`select pg_wal_lsn_diff(pg_current_wal_lsn(), ${startLsn}::pg_lsn)::float8 as written`;
  const caughtUpFrom = performance.now();
  for (let i = 0; i < 600 && (await readReplicaLag(replica, primary)).bytes > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  const catchUpSeconds = Number(((performance.now() - caughtUpFrom) / 1000).toFixed(2));
  bytes.sort((a, b) => a - b);
  seconds.sort((a, b) => a - b);
  const summary = (values: number[], digits: number) => ({
    p50: Number(percentile(values, 0.5).toFixed(digits)),
    p99: Number(percentile(values, 0.99).toFixed(digits)),
    max: Number((values.at(-1) ?? 0).toFixed(digits)),
  });
  const result: ReplicaLagFigures = {
    measured: true,
    seconds: Number(elapsed.toFixed(1)),
    ordersPerSecond: Number((orders / elapsed).toFixed(1)),
    walBytesPerSecond: Math.round(written / elapsed),
    lagBytes: summary(bytes, 0),
    lagSeconds: summary(seconds, 3),
    samples: bytes.length,
    catchUpSeconds,
  };
  options.say(
    `  replica lag at ${result.ordersPerSecond} orders/s (${Math.round(result.walBytesPerSecond / 1024)} KB of WAL a second): p50 ${result.lagBytes.p50} bytes / ${result.lagSeconds.p50} s, p99 ${result.lagBytes.p99} bytes / ${result.lagSeconds.p99} s; caught up ${catchUpSeconds} s after`,
  );
  return result;
}
