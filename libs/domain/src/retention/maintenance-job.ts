import type { PgBoss, Queue } from 'pg-boss';
import type { Sql } from '@lop/db';
import { ensureEventPartitions, type EventPartitionsState } from '../events/partitions';
import { countPrunedRows, markRetentionRun } from '../metrics/metrics';
import { pruneExpiredRows, type PrunedRows, type RetentionSettings } from './retention';

/**
 * The one scheduled maintenance job: events' partitions made ahead (events/partitions.ts), then a
 * retention pass over the tables that would otherwise grow without bound.
 */
export const MAINTENANCE_QUEUE = 'partner-maintenance';

/** Every ten minutes (UTC): often enough that rate-limit counters stay a few dozen rows per key. */
export const MAINTENANCE_CRON = '*/10 * * * *';

/**
 * `stately`: at most one run queued and one running, across every worker replica. pg-boss's cron
 * pass creates each occurrence's job once (whichever instance claims the pass), and a job goes to
 * one worker, so one process runs each pass; a pass still running when the next is due makes the
 * next one wait rather than run beside it.
 */
export const MAINTENANCE_QUEUE_OPTIONS: Omit<Queue, 'name'> = {
  policy: 'stately',
  // A first pass over years of history may take a while; it works in batches and resumes where it stopped.
  expireInSeconds: 1800,
  retryLimit: 2,
  retryDelay: 60,
  // A pass not started within an hour is superseded by a later one.
  retentionSeconds: 3600,
  deleteAfterSeconds: 86_400,
};

export interface MaintenanceOptions {
  sql: Sql;
  settings: RetentionSettings;
  /** Told after each pass (and each failed one, which pg-boss retries). */
  onPass?: (outcome: MaintenanceOutcome | { error: Error }) => void;
}

/**
 * Registers the schedule and this process as one of the workers that may run it. The pg-boss
 * instance must be started with `schedule: true` (the delivery worker's is).
 */
export async function startMaintenance(boss: PgBoss, options: MaintenanceOptions): Promise<void> {
  await boss.createQueue(MAINTENANCE_QUEUE, MAINTENANCE_QUEUE_OPTIONS);
  // createQueue keeps an existing queue's options; a queue's policy is fixed at its creation.
  const { policy: _policy, ...updatable } = MAINTENANCE_QUEUE_OPTIONS;
  await boss.updateQueue(MAINTENANCE_QUEUE, updatable);
  // Every replica upserts the same schedule; `once`: a pass missed while no worker ran is made up at the next start.
  await boss.schedule(MAINTENANCE_QUEUE, MAINTENANCE_CRON, null, { tz: 'UTC', missed: 'once' });
  await boss.work(MAINTENANCE_QUEUE, { batchSize: 1, localConcurrency: 1 }, async () => {
    const started = performance.now();
    try {
      const outcome = await runMaintenancePass(options.sql, options.settings);
      options.onPass?.({ ...outcome, seconds: (performance.now() - started) / 1000 });
    } catch (error) {
      options.onPass?.({ error: error as Error });
      throw error;
    }
  });
}

export interface MaintenanceOutcome {
  pruned: PrunedRows;
  /** The events partitions this pass made, and how far they now reach. */
  eventPartitions: EventPartitionsState;
  seconds: number;
}

/**
 * One maintenance pass: events' partitions first (an insert past the last one fails, so they come
 * before anything that could fail the pass), then retention, counted in the metrics table by table.
 */
export async function runMaintenancePass(sql: Sql, settings: RetentionSettings, now?: Date): Promise<Omit<MaintenanceOutcome, 'seconds'>> {
  const eventPartitions = await ensureEventPartitions(sql, now);
  const pruned = await pruneExpiredRows(sql, settings, { now, onPruned: countPrunedRows });
  markRetentionRun();
  return { pruned, eventPartitions };
}
