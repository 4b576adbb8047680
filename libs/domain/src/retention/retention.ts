import type { Sql } from '@lop/db';
import type { Config } from '../config/config';
import { pruneRequestLog } from '../request-log/request-log';
import { pruneFinishedDeliveries } from '../webhooks/delivery-store';

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
 */
export interface RetentionSettings {
  idempotencyKeySeconds: number;
  rateLimitCounterSeconds: number;
  webhookHistorySeconds: number;
}

/**
 * Counters are read only for the window in progress (60 s today); an hour covers any window the
 * limiter might be given and keeps at most a few dozen rows per key between runs.
 */
export const RATE_LIMIT_COUNTER_RETENTION_SECONDS = 3600;

export function retentionSettings(config: Pick<Config, 'PARTNER_IDEMPOTENCY_KEY_RETENTION_HOURS' | 'PARTNER_WEBHOOK_RETENTION_DAYS'>): RetentionSettings {
  return {
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
    // A key still locked by a running request stays, whatever its age (it cannot be, in practice:
    // the lock lasts seconds), so pruning can never make an in-flight create look new.
    const rows = await sql`
      delete from idempotency_keys where ctid = any(array(
        select ctid from idempotency_keys
        where created_at < ${keysBefore}::timestamptz and locked_until < ${now.toISOString()}::timestamptz
        limit ${batch}))`;
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
  for (;;) {
    const row = await pruneFinishedDeliveries(sql, deliveriesBefore, batch);
    pruned.webhook_delivery_attempts += row.attempts;
    pruned.webhook_deliveries += row.deliveries;
    if (row.deliveries < batch) break;
  }
  report('webhook_delivery_attempts');
  report('webhook_deliveries');

  // The request log's own module owns its table and its window, as the deliveries' own module owns theirs.
  pruned.sandbox_request_log = await pruneRequestLog(sql, now, batch);
  report('sandbox_request_log');
  return pruned;
}
