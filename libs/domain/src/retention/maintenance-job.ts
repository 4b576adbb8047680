import type { PgBoss, Queue } from 'pg-boss';
import { AUDIT_DEFAULTS, runAuditMaintenance } from '../audit/maintenance';
import type { Sql } from '@lop/db';
import { ensureEventPartitions, type EventPartitionsState } from '../events/partitions';
import { countPrunedRows, markRetentionRun } from '../metrics/metrics';
import { ensureRetentionPartitions } from './partitioned-tables';
import { pruneExpiredRows, type PrunedRows, type RetentionSettings } from './retention';

/**
 * The one scheduled maintenance job: events' partitions made ahead (events/partitions.ts), the
 * partitions of the tables pruned by age made ahead (partitioned-tables.ts), then a retention pass
 * over the tables that would otherwise grow without bound.
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
  /** Told of the retention tables' partitions made ahead when this process starts (or why it could not: the next pass tries again). */
  onStartPartitions?: (outcome: { created: string[] } | { error: Error }) => void;
}

/**
 * Registers the schedule and this process as one of the workers that may run it. The pg-boss
 * instance must be started with `schedule: true` (the delivery worker's is).
 */
export async function startMaintenance(boss: PgBoss, options: MaintenanceOptions): Promise<void> {
  // At start too, not only every 10 minutes: a worker that was down past the runway makes them at once.
  try {
    options.onStartPartitions?.({ created: await ensureRetentionPartitions(options.sql) });
  } catch (error) {
    options.onStartPartitions?.({ error: error as Error });
  }
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
  /** Partitions of the tables pruned by age made ahead in this pass. */
  partitionsCreated: string[];
  /** Partitions past their window detached and dropped in this pass, with their rows. */
  partitionsDropped: { table: string; partition: string; rows: number }[];
  /** Audit records sealed into their month's chain in this pass. */
  auditSealed: number;
  seconds: number;
}

/**
 * One maintenance pass: partitions first (an insert past the last one fails, so they come before
 * anything that could fail the pass), events' then the pruned tables', then retention, counted in
 * the metrics table by table (a dropped partition's rows included).
 */
export async function runMaintenancePass(sql: Sql, settings: RetentionSettings, now?: Date): Promise<Omit<MaintenanceOutcome, 'seconds'>> {
  const eventPartitions = await ensureEventPartitions(sql, now);
  const partitionsCreated = await ensureRetentionPartitions(sql, now);
  const partitionsDropped: MaintenanceOutcome['partitionsDropped'] = [];
  const pruned = await pruneExpiredRows(sql, settings, { now, onPruned: countPrunedRows, onPartitionDropped: (dropped) => partitionsDropped.push(dropped) });
  // The audit trail: seal what is past the margin, drop months past retention.
  const audit = await runAuditMaintenance(sql, settings.audit ?? AUDIT_DEFAULTS, now);
  for (const partition of audit.dropped) partitionsDropped.push({ table: 'audit_records', partition, rows: 0 });
  markRetentionRun();
  return { pruned, eventPartitions, partitionsCreated, partitionsDropped, auditSealed: audit.sealed };
}
