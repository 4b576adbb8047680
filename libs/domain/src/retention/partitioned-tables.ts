import { ensurePartitions, nextPeriod, periodStart, type PartitionUnit, type Sql } from '@lop/db';
import { REQUEST_LOG_PARTITION_UNIT } from '../request-log/request-log';
import { DELIVERY_PARTITION_UNIT } from '../webhooks/delivery-store';

/**
 * The tables pruned by age that are partitioned by time (migrations 0020-0024), their period, and
 * how far ahead their partitions are made. The maintenance job makes them ahead at every worker
 * start and every pass (every 10 minutes), so a missed pass or a week of workers down costs
 * nothing; the previous release makes none, and the migration left a runway for a rollback
 * (six weeks of deliveries and attempts, fourteen days of the request log, from a week ahead).
 */
export const PARTITIONED_TABLES: readonly { table: string; unit: PartitionUnit; ahead: number }[] = Object.freeze([
  { table: 'webhook_deliveries', unit: DELIVERY_PARTITION_UNIT, ahead: 4 },
  { table: 'webhook_delivery_attempts', unit: DELIVERY_PARTITION_UNIT, ahead: 4 },
  { table: 'sandbox_request_log', unit: REQUEST_LOG_PARTITION_UNIT, ahead: 14 },
  // The audit trail (audit/maintenance.ts): kept for years, dropped a month at a time.
  { table: 'audit_records', unit: 'month', ahead: 3 },
]);

export const PERIOD_MS = { day: 86_400_000, week: 7 * 86_400_000 } as const;

/**
 * Makes the partitions each table needs from now's period to `ahead` periods later (periods a
 * wider partition already covers, such as the legacy one, are left alone). A table that is not
 * partitioned yet (the schema before 0020-0024) is skipped. Returns the partitions made.
 */
export async function ensureRetentionPartitions(sql: Sql, now = new Date()): Promise<string[]> {
  const created: string[] = [];
  for (const { table, unit, ahead } of PARTITIONED_TABLES) {
    const [{ partitioned }] = await sql<{ partitioned: boolean }[]>`select coalesce((select relkind = 'p' from pg_class where oid = to_regclass(${table})), false) as partitioned`;
    if (!partitioned) continue;
    const from = periodStart(now, unit);
    let to = from;
    for (let i = 0; i <= ahead; i++) to = nextPeriod(to, unit);
    created.push(...(await ensurePartitions(sql, { table, unit }, from, to)));
  }
  return created;
}
