import { ensurePartitions, listPartitions, nextPeriod, partitionHorizon, periodStart, type PartitionedTable, type PartitionInfo, type Sql } from '@lop/db';

/**
 * events is partitioned by month of created_at (migrations 0017-0019): an insert whose created_at
 * has no partition fails, and with it every order create and change. So partitions are made ahead:
 * the current month and EVENTS_MONTHS_AHEAD more, by the delivery worker when it starts and by
 * every maintenance pass (retention/maintenance-job.ts, every 10 minutes), and the horizon is a
 * gauge (partner_events_partition_horizon_seconds) an alert watches (docs/operations.md §
 * Partitioned history).
 */
export const EVENTS_PARTITIONS: PartitionedTable = {
  table: 'events',
  unit: 'month',
  // What the parent cannot hold (its unique keys would have to include created_at): each
  // partition's own primary key and stream index, as 0018 made the first ones.
  localDdl: (partition, name) => [
    `alter table ${partition} add constraint "${name}_pkey" primary key ("id")`,
    `create unique index "${name}_stream_sequence_idx" on ${partition} using btree ("client_id", "environment", "sequence")`,
  ],
};

/** Months made ahead of the current one: three months of slack for a maintenance schedule that stopped. */
export const EVENTS_MONTHS_AHEAD = 3;

/** Below this many days of partitions ahead, the maintenance pass logs a warning (and the gauge says so). */
export const EVENTS_HORIZON_WARNING_DAYS = 45;

export interface EventPartitionsState {
  /** False on the schema before 0019 (this release serves it): nothing to make. */
  partitioned: boolean;
  created: string[];
  /** Rows created at or after this instant have no partition yet. */
  horizon: Date | null | undefined;
}

async function isPartitioned(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ partitioned: boolean }[]>`select coalesce((select relkind = 'p' from pg_class where oid = to_regclass('events')), false) as partitioned`;
  return row.partitioned;
}

/**
 * Makes the partitions of the current month and the EVENTS_MONTHS_AHEAD after it (and of every
 * month from `since`, for a loader writing history); idempotent.
 */
export async function ensureEventPartitions(sql: Sql, now: Date = new Date(), options: { since?: Date } = {}): Promise<EventPartitionsState> {
  if (!(await isPartitioned(sql))) return { partitioned: false, created: [], horizon: undefined };
  const from = periodStart(options.since && options.since < now ? options.since : now);
  let to = periodStart(now);
  for (let i = 0; i <= EVENTS_MONTHS_AHEAD; i++) to = nextPeriod(to);
  const created = await ensurePartitions(sql, EVENTS_PARTITIONS, from, to);
  return { partitioned: true, created, horizon: partitionHorizon(await listPartitions(sql, EVENTS_PARTITIONS.table)) };
}

/** The partitions of events, oldest first (empty on the schema before 0019). */
export async function eventPartitions(sql: Sql): Promise<PartitionInfo[]> {
  return listPartitions(sql, EVENTS_PARTITIONS.table);
}

/** Seconds from `now` until the events partitions end: negative means inserts are failing now. Undefined when not partitioned; Infinity with a MAXVALUE or default partition. */
export function horizonSeconds(horizon: Date | null | undefined, now: Date = new Date()): number | undefined {
  if (horizon === undefined) return undefined;
  if (horizon === null) return Infinity;
  return (horizon.getTime() - now.getTime()) / 1000;
}
