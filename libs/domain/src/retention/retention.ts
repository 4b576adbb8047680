import { listPartitions, type PartitionInfo, type Sql } from '@lop/db';
import { AUDIT_DEFAULTS, type AuditMaintenanceSettings } from '../audit/maintenance';
import { PERIOD_MS } from './partitioned-tables';
import type { Config } from '../config/config';
import { pruneRequestLog } from '../request-log/request-log';
import { DELIVERY_PARTITION_UNIT, dropDeliveryPartitions, pruneFinishedDeliveries } from '../webhooks/delivery-store';

/**
 * What the service keeps, and for how long (DESIGN §14): nothing grows without bound except the
 * event stream, which is the partners' reconciliation record and is never pruned here.
 *
 * - idempotency keys: at least 24 hours (the contract; configuration refuses less), then removed;
 * - rate-limit counters: a window's counter is dead once the window has ended;
 * - webhook deliveries that reached a final state (delivered, dead letter, cancelled, failed test)
 *   and their attempts: kept a configurable number of days after they finished. A pending
 *   delivery is never pruned, however old: its attempt chain is still running;
 * - the sandbox request log: 7 days (request-log/record.ts), the window the issue promised partners.
 *
 * Webhook deliveries, their attempts and the request log are partitioned by time (issue 32,
 * migrations 0020-0024): what has passed its window leaves as whole partitions, detached and
 * dropped, instead of DELETEd rows. A partition goes only once its whole range is past the window
 * and nothing in it is still kept, so a row may live up to one partition (a week; a day for the
 * request log) longer than its window, never shorter. Rows are still deleted one batch at a time
 * where no partition can go: the legacy partition (each table as it was before), and a week of
 * deliveries that a pending delivery holds back once it is a week overdue.
 * idempotency_keys stays one table: its primary key (client, environment, key) is the
 * ON CONFLICT target of every claim, and a partitioned table's unique keys must include the
 * partition key, so a retry across a partition boundary would no longer find its first request.
 * Its rows are bounded by the window (at most the creates of 48 hours by default), and so is the
 * rate of its deletes.
 */
export interface RetentionSettings {
  idempotencyKeySeconds: number;
  rateLimitCounterSeconds: number;
  webhookHistorySeconds: number;
  /** The audit trail's retention and sealing (audit/maintenance.ts); its defaults when absent. */
  audit?: AuditMaintenanceSettings;
}

/**
 * Counters are read only for the window in progress (60 s today); an hour covers any window the
 * limiter might be given and keeps at most a few dozen rows per key between runs.
 */
export const RATE_LIMIT_COUNTER_RETENTION_SECONDS = 3600;

export function retentionSettings(
  config: Pick<Config, 'PARTNER_IDEMPOTENCY_KEY_RETENTION_HOURS' | 'PARTNER_WEBHOOK_RETENTION_DAYS'> & Partial<Pick<Config, 'PARTNER_AUDIT_RETENTION_MONTHS' | 'PARTNER_AUDIT_SEAL_MARGIN_SECONDS'>>,
): RetentionSettings {
  return {
    audit: {
      retentionMonths: config.PARTNER_AUDIT_RETENTION_MONTHS ?? AUDIT_DEFAULTS.retentionMonths,
      sealMarginSeconds: config.PARTNER_AUDIT_SEAL_MARGIN_SECONDS ?? AUDIT_DEFAULTS.sealMarginSeconds,
    },
    idempotencyKeySeconds: Math.round(config.PARTNER_IDEMPOTENCY_KEY_RETENTION_HOURS * 3600),
    rateLimitCounterSeconds: RATE_LIMIT_COUNTER_RETENTION_SECONDS,
    webhookHistorySeconds: Math.round(config.PARTNER_WEBHOOK_RETENTION_DAYS * 86_400),
  };
}

/** The tables a maintenance run prunes: the label of `partner_retention_pruned_rows_total`. */
export const PRUNED_TABLES = ['idempotency_keys', 'rate_limit_counters', 'webhook_delivery_attempts', 'webhook_deliveries', 'sandbox_request_log'] as const;
export type PrunedTable = (typeof PRUNED_TABLES)[number];
export type PrunedRows = Record<PrunedTable, number>;

export interface PruneOptions {
  /** The instant the windows are measured from; tests move it forward instead of waiting. */
  now?: Date;
  /**
   * Rows per statement. Each batch is its own short statement, so a first run over years of
   * history never holds locks or a snapshot for long, and live traffic interleaves with it.
   */
  batchSize?: number;
  /** Told after each table, for metrics and logs. */
  onPruned?: (table: PrunedTable, rows: number) => void;
  /** Told of each partition dropped (its rows are counted in `onPruned` too). */
  onPartitionDropped?: (dropped: { table: PrunedTable; partition: string; rows: number }) => void;
}

/**
 * The rows the row-by-row pass may still delete on a partitioned table: those below the returned
 * bound of the partition key. Undefined on a table that is not partitioned (every row). Below it
 * lie the legacy partition (FROM MINVALUE) and partitions that ended before `overdueBefore`.
 */
export function rowPassBound(partitions: PartitionInfo[], overdueBefore?: Date): Date | undefined {
  if (partitions.length === 0) return undefined;
  const bounds = partitions.filter((p) => !p.isDefault && p.to !== null && (p.from === null || (overdueBefore !== undefined && p.to <= overdueBefore))).map((p) => p.to!.getTime());
  return new Date(bounds.length > 0 ? Math.max(...bounds) : 0);
}

/** Deletes what has outlived its retention window; returns the rows removed per table. */
export async function pruneExpiredRows(sql: Sql, settings: RetentionSettings, options: PruneOptions = {}): Promise<PrunedRows> {
  const now = options.now ?? new Date();
  const batch = options.batchSize ?? 5_000;
  const before = (seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString();
  const pruned: PrunedRows = { idempotency_keys: 0, rate_limit_counters: 0, webhook_delivery_attempts: 0, webhook_deliveries: 0, sandbox_request_log: 0 };
  const report = (table: PrunedTable) => options.onPruned?.(table, pruned[table]);

  const keysBefore = before(settings.idempotencyKeySeconds);
  for (;;) {
    // By age alone: a create in flight owns its key by an advisory lock and writes its row only as
    // it commits (orders/idempotency.ts), so no row stands for a running request. locked_until is a
    // lease of older releases that every release since sets to now(); it is being removed (0030).
    const rows = await sql`
      delete from idempotency_keys where ctid = any(array(
        select ctid from idempotency_keys where created_at < ${keysBefore}::timestamptz limit ${batch}))`;
    pruned.idempotency_keys += rows.count;
    if (rows.count < batch) break;
  }
  report('idempotency_keys');

  const countersBefore = before(settings.rateLimitCounterSeconds);
  for (;;) {
    const rows = await sql`
      delete from rate_limit_counters where ctid = any(array(
        select ctid from rate_limit_counters where window_start < ${countersBefore}::timestamptz limit ${batch}))`;
    pruned.rate_limit_counters += rows.count;
    if (rows.count < batch) break;
  }
  report('rate_limit_counters');

  const deliveriesBefore = before(settings.webhookHistorySeconds);
  for (const dropped of await dropDeliveryPartitions(sql, new Date(deliveriesBefore))) {
    const table = dropped.table as PrunedTable;
    pruned[table] += dropped.rows;
    pruned.webhook_delivery_attempts += dropped.attemptsDeleted ?? 0;
    options.onPartitionDropped?.({ table, partition: dropped.partition, rows: dropped.rows });
  }
  // A week that a pending delivery holds back: what is finished in it goes by row once the week
  // is a whole week overdue (a delivery's retries end within about 1.5 days, so by then a week is
  // held only by a delivery that stays pending unusually long).
  const overdue = new Date(new Date(deliveriesBefore).getTime() - PERIOD_MS[DELIVERY_PARTITION_UNIT]);
  const createdBound = rowPassBound(await listPartitions(sql, 'webhook_deliveries'), overdue);
  for (;;) {
    const row = await pruneFinishedDeliveries(sql, deliveriesBefore, batch, createdBound?.toISOString());
    pruned.webhook_delivery_attempts += row.attempts;
    pruned.webhook_deliveries += row.deliveries;
    if (row.deliveries < batch) break;
  }
  report('webhook_delivery_attempts');
  report('webhook_deliveries');

  // The request log's own module owns its table and its window, as the deliveries' own module owns theirs.
  pruned.sandbox_request_log = await pruneRequestLog(sql, now, batch, (partition, rows) => options.onPartitionDropped?.({ table: 'sandbox_request_log', partition, rows }));
  report('sandbox_request_log');
  return pruned;
}
