import { timingSafeEqual } from 'node:crypto';
import { and, desc, eq, gt, gte, inArray, lt, not, sql as sqlText, type SQL } from 'drizzle-orm';
import { detachPartition, listPartitions, orders, sandboxRequestLog, type Database, type Sql } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { PartnerError } from '../http/errors';
import { orderProgramGranted } from '../programs/programs';
import type { DataProtector } from '../security/protector';
import { REQUEST_LOG_RETENTION_DAYS } from './record';
import type { RequestLogDetail, RequestLogEntry, RequestLogPage } from './request-log.schemas';

export const REQUEST_LOG_DEFAULT_LIMIT = 50;
/** The period of sandbox_request_log's partitions (migration 0021): a day of a 7-day window. */
export const REQUEST_LOG_PARTITION_UNIT = 'day' as const;
export const REQUEST_LOG_MAX_LIMIT = 200;

/** The log is a sandbox tool (docs/request-log.md): production requests are never recorded, nor read here. */
export function requireSandboxCaller(caller: Caller): void {
  if (caller.environment !== 'sandbox') {
    throw new PartnerError('forbidden', 'The request log is kept for sandbox keys only (lop_test_…); production requests are not logged.', {
      details: [{ field: 'Authorization', issue: 'production_key' }],
    });
  }
}

const CURSOR_PURPOSE = 'partner-service/request-log-cursor';
/** position (8 bytes) + HMAC tag (16 bytes): 32 base64url characters. */
const CURSOR_BYTES = 24;
const tagOf = (protector: DataProtector, caller: Caller, position: number) =>
  protector.digest(CURSOR_PURPOSE, `${caller.clientId}:${caller.environment}:${position}`).subarray(0, 16);

/** Opaque and bound to its API client and environment (as event cursors are): another client's cursor is refused. */
export function encodeRequestLogCursor(protector: DataProtector, caller: Caller, position: number): string {
  const bytes = Buffer.alloc(CURSOR_BYTES);
  bytes.writeBigUInt64BE(BigInt(position), 0);
  tagOf(protector, caller, position).copy(bytes, 8);
  return bytes.toString('base64url');
}

export function decodeRequestLogCursor(protector: DataProtector, caller: Caller, cursor: string): number {
  const bytes = /^[A-Za-z0-9_-]{32}$/.test(cursor) ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0);
  const position = bytes.length === CURSOR_BYTES ? Number(bytes.readBigUInt64BE(0)) : -1;
  if (position < 0 || !Number.isSafeInteger(position) || !timingSafeEqual(bytes.subarray(8), tagOf(protector, caller, position))) {
    throw new PartnerError('invalid_request', 'The cursor is not valid for this API client; use next_cursor from a previous response, or omit it to start from the latest entries.', {
      details: [{ field: 'after', issue: 'invalid_cursor' }],
    });
  }
  return position;
}

export interface RequestLogFilter {
  after?: string;
  status_class?: '2xx' | '3xx' | '4xx' | '5xx';
  route?: string;
  request_id?: string;
  limit: number;
}

type Row = typeof sandboxRequestLog.$inferSelect;

const entryOf = (row: Row): RequestLogEntry => ({
  request_id: row.requestId,
  occurred_at: row.occurredAt.toISOString(),
  method: row.method,
  route: row.route,
  status: row.status,
  error_code: row.errorCode,
  duration_ms: row.durationMs,
  key_prefix: row.keyPrefix,
  source: row.door === 'console' ? 'console' : 'rest',
});

/** Every read is the caller's own rows (laboratory, client, environment) within the retention window. */
function callerRows(caller: Caller, now: Date): SQL[] {
  return [
    eq(sandboxRequestLog.clientId, caller.clientId),
    eq(sandboxRequestLog.environment, caller.environment),
    eq(sandboxRequestLog.laboratoryId, caller.laboratoryId),
    gte(sandboxRequestLog.occurredAt, new Date(now.getTime() - REQUEST_LOG_RETENTION_DAYS * 86_400_000)),
  ];
}

/**
 * GET /v1/sandbox/request-log: without `after`, the latest `limit` entries that match; with it, the
 * entries logged after it. Oldest first either way, and `next_cursor` always present, so a tail
 * polls from it.
 */
export async function listRequestLog(db: Database, protector: DataProtector, caller: Caller, filter: RequestLogFilter, now = new Date()): Promise<RequestLogPage> {
  requireSandboxCaller(caller);
  const after = filter.after === undefined ? undefined : decodeRequestLogCursor(protector, caller, filter.after);
  const where = callerRows(caller, now);
  if (filter.status_class) {
    const low = Number(filter.status_class[0]) * 100;
    where.push(gte(sandboxRequestLog.status, low), lt(sandboxRequestLog.status, low + 100));
  }
  if (filter.route !== undefined) where.push(eq(sandboxRequestLog.route, filter.route));
  if (filter.request_id !== undefined) where.push(eq(sandboxRequestLog.requestId, filter.request_id));
  let rows: Row[];
  if (after === undefined) {
    rows = (await db.select().from(sandboxRequestLog).where(and(...where)).orderBy(desc(sandboxRequestLog.id)).limit(filter.limit + 1)).reverse();
    // The latest page: what came before it is not "more" for a tail.
    if (rows.length > filter.limit) rows = rows.slice(1);
    const position = rows.at(-1)?.id ?? (await latestPosition(db, caller, now));
    return { entries: rows.map(entryOf), next_cursor: encodeRequestLogCursor(protector, caller, position), has_more: false };
  }
  rows = await db
    .select()
    .from(sandboxRequestLog)
    .where(and(...where, gt(sandboxRequestLog.id, after)))
    .orderBy(sandboxRequestLog.id)
    .limit(filter.limit + 1);
  const page = rows.slice(0, filter.limit);
  return { entries: page.map(entryOf), next_cursor: encodeRequestLogCursor(protector, caller, page.at(-1)?.id ?? after), has_more: rows.length > filter.limit };
}

/** Where a tail starts when nothing matches yet: after the caller's newest row (its own, so the cursor says nothing of others). */
async function latestPosition(db: Database, caller: Caller, now: Date): Promise<number> {
  const [row] = await db
    .select({ id: sqlText<number>`coalesce(max(${sandboxRequestLog.id}), 0)`.mapWith(Number) })
    .from(sandboxRequestLog)
    .where(and(...callerRows(caller, now)));
  return row?.id ?? 0;
}

/**
 * One logged request with its stored bodies (console). The bodies are shown only to a key that
 * carries the scope the route needs: the log must not widen what a narrowly scoped key can read.
 */
export async function getRequestLogEntry(db: Database, caller: Caller, requestId: string, now = new Date()): Promise<RequestLogDetail> {
  requireSandboxCaller(caller);
  const [row] = await db
    .select()
    .from(sandboxRequestLog)
    .where(and(...callerRows(caller, now), eq(sandboxRequestLog.requestId, requestId)))
    .orderBy(desc(sandboxRequestLog.id))
    .limit(1);
  if (!row) throw new PartnerError('not_found', 'No logged request with this request_id for this API client in the last 7 days.');
  const reason =
    row.scope !== null && !caller.scopes.has(row.scope as never) ? 'missing_scope' : (await mentionsUnreadableOrder(db, caller, row)) ? 'order_not_readable' : null;
  const withheld = reason !== null;
  return {
    ...entryOf(row),
    request_body: withheld ? null : (row.requestBody ?? null),
    response_body: withheld ? null : (row.responseBody ?? null),
    bodies_withheld: withheld,
    bodies_withheld_reason: reason,
  };
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * Whether the entry's bodies are about an order of the caller that the caller may no longer read
 * (its program withdrawn: the order reads' own rule, orderProgramGranted): the log must not keep
 * serving what GET order answers 404 for. Paths are not stored, so the order is found by its id in
 * the stored bodies — every order route's bodies carry it (order_id in the order, its results,
 * report and exceptions; the FHIR bundle's references) — whichever field or depth it is in.
 */
async function mentionsUnreadableOrder(db: Database, caller: Caller, row: Row): Promise<boolean> {
  const ids = [...new Set(`${JSON.stringify(row.requestBody ?? null)} ${JSON.stringify(row.responseBody ?? null)}`.toLowerCase().match(UUID) ?? [])];
  if (ids.length === 0) return false;
  const [found] = await db
    .select({ id: orders.id })
    .from(orders)
    .where(
      and(
        inArray(orders.id, ids),
        eq(orders.laboratoryId, caller.laboratoryId),
        eq(orders.clientId, caller.clientId),
        eq(orders.environment, caller.environment),
        not(orderProgramGranted()),
      ),
    )
    .limit(1);
  return found !== undefined;
}

/**
 * Retention (retention/retention.ts runs it): since migration 0024 the log is partitioned by day,
 * and a day whose whole range is older than the window is detached and dropped, its rows counted
 * first; nothing in it is ever kept. The day the window's edge falls in waits for the next pass
 * (a row lives up to a day longer, never shorter; reads stop at 7 days anyway). Row by row, in
 * short batches, only what is not in a day partition: the legacy partition (the table as it was
 * before 0024), or the whole table on the schema before it.
 */
export async function pruneRequestLog(sql: Sql, now: Date, batchSize: number, onDropped?: (partition: string, rows: number) => void): Promise<number> {
  const before = new Date(now.getTime() - REQUEST_LOG_RETENTION_DAYS * 86_400_000);
  let pruned = 0;
  const partitions = await listPartitions(sql, 'sandbox_request_log');
  for (const partition of partitions.filter((p) => !p.isDefault && p.to !== null && p.to <= before)) {
    const [{ rows }] = await sql.unsafe<{ rows: number }[]>(`select count(*)::int as rows from "${partition.name}"`);
    await detachPartition(sql, 'sandbox_request_log', partition);
    pruned += rows;
    onDropped?.(partition.name, rows);
  }
  const legacy = partitions.find((p) => p.from === null && p.to !== null && p.to > before);
  if (partitions.length > 0 && !legacy) return pruned;
  const below = (legacy ? new Date(Math.min(before.getTime(), legacy.to!.getTime())) : before).toISOString();
  for (;;) {
    const rows = await sql`
      delete from sandbox_request_log where id = any(array(
        select id from sandbox_request_log where occurred_at < ${below}::timestamptz limit ${batchSize}))`;
    pruned += rows.count;
    if (rows.count < batchSize) return pruned;
  }
}
