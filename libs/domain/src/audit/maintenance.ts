import { detachPartition, listPartitions, periodStart, type PartitionedTable, type Sql } from '@lop/db';
import { sealAuditTrail } from './chain';

/** audit_records: one partition a month (migration 0029), made ahead by the maintenance pass. */
export const AUDIT_PARTITIONS: PartitionedTable = { table: 'audit_records', unit: 'month' };

export interface AuditMaintenanceSettings {
  /** Months of records kept (PARTNER_AUDIT_RETENTION_MONTHS, six years by default). */
  retentionMonths: number;
  /** Records are sealed once this old (PARTNER_AUDIT_SEAL_MARGIN_SECONDS). */
  sealMarginSeconds: number;
}

export const AUDIT_DEFAULTS: AuditMaintenanceSettings = { retentionMonths: 72, sealMarginSeconds: 600 };

/** The first instant still kept: the start of the month `retentionMonths` before now's. */
export function auditRetentionStart(now: Date, retentionMonths: number): Date {
  const current = periodStart(now, 'month');
  return new Date(Date.UTC(current.getUTCFullYear(), current.getUTCMonth() - retentionMonths, 1));
}

/**
 * The audit trail's part of a maintenance pass: seal what is old enough, then drop whole months
 * past retention together with their chain heads (a month goes only once all of it is past).
 * Partitions ahead are made with the other tables' (retention/partitioned-tables.ts).
 */
export async function runAuditMaintenance(sql: Sql, settings: AuditMaintenanceSettings, now: Date = new Date()): Promise<{ sealed: number; dropped: string[] }> {
  // The schema before 0029 (a worker of this release started before the migration): nothing yet.
  const [{ exists }] = await sql<{ exists: boolean }[]>`select to_regclass('audit_records') is not null as exists`;
  if (!exists) return { sealed: 0, dropped: [] };
  const { sealed } = await sealAuditTrail(sql, { marginSeconds: settings.sealMarginSeconds, now });
  const keepFrom = auditRetentionStart(now, settings.retentionMonths);
  const dropped: string[] = [];
  for (const partition of await listPartitions(sql, AUDIT_PARTITIONS.table)) {
    if (partition.isDefault || partition.to === null || partition.to > keepFrom) continue;
    await detachPartition(sql, AUDIT_PARTITIONS.table, partition);
    dropped.push(partition.name);
  }
  if (dropped.length > 0) await sql`delete from audit_chain_heads where period < ${keepFrom.toISOString().slice(0, 10)}`;
  return { sealed, dropped };
}
