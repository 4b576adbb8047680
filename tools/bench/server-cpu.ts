import type { Sql } from '@lop/db';
import { cpuTimeOf } from './processes';

/**
 * CPU time spent by a PostgreSQL server's processes, from /proc (the server must run on this
 * machine, and be the caller's alone: the capacity bench's private cluster). The processes are the
 * ones `pg_stat_activity` lists — client backends and the background processes (walwriter,
 * checkpointer, autovacuum, walsenders) — sampled every `everyMs`: a connection opened during a
 * window counts from its birth, one that ends keeps the CPU time it had at its last sample. The
 * total only grows, so the CPU of a window is the difference of two readings.
 */
export interface ServerCpu {
  /** Milliseconds of CPU used so far by every process seen (sampled now). */
  read(): Promise<number>;
  stop(): void;
}

export async function sampleServerCpu(monitor: Sql, options: { everyMs?: number } = {}): Promise<ServerCpu | null> {
  const latest = new Map<number, number>();
  const sample = async () => {
    const rows = await monitor<{ pid: number }[]>`select pid from pg_stat_activity`;
    for (const { pid } of rows) {
      const ms = cpuTimeOf(pid);
      if (ms !== null) latest.set(pid, ms);
    }
  };
  await sample();
  // Not on this machine (or no /proc): the server's CPU cannot be read.
  if (latest.size === 0) return null;
  let pending: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    pending = pending.then(sample).catch(() => undefined);
  }, options.everyMs ?? 250);
  timer.unref();
  return {
    read: async () => {
      await pending;
      await sample();
      let total = 0;
      for (const ms of latest.values()) total += ms;
      return total;
    },
    stop: () => clearInterval(timer),
  };
}
