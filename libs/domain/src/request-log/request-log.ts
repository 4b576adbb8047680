import { timingSafeEqual } from 'node:crypto';
import { and, desc, eq, gt, gte, inArray, lt, lte, not, or, isNull, sql as sqlText, type SQL } from 'drizzle-orm';
import { REQUEST_LOG_SOURCES, type RequestLogMethod, type RequestLogSource } from '@lop/contract';
import { detachPartition, listPartitions, orders, sandboxRequestLog, type Database, type Sql } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { cursorCodec, sequencePosition } from '../http/cursor';
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

/**
 * The request log's next cursor format: every other list's (http/cursor.ts), bound to the API client
 * and environment. A rollout serves two releases at once and a follower's cursor moves between them,
 * so the format changes over three releases: this one reads both and still issues its own; the next
 * issues this one; the one after stops reading the 32-character format (docs/request-log.md).
 */
const nextCursor = cursorCodec({ purpose: CURSOR_PURPOSE, version: 1, position: sequencePosition });
const bindingOf = (caller: Caller) => `${caller.clientId}:${caller.environment}`;

/** Opaque and bound to its API client and environment (as event cursors are): another client's cursor is refused. */
export function encodeRequestLogCursor(protector: DataProtector, caller: Caller, position: number): string {
  const bytes = Buffer.alloc(CURSOR_BYTES);
  bytes.writeBigUInt64BE(BigInt(position), 0);
  tagOf(protector, caller, position).copy(bytes, 8);
  return bytes.toString('base64url');
}

/** A cursor in the format the next release issues (see nextCursor). */
export const encodeNextRequestLogCursor = (protector: DataProtector, caller: Caller, position: number): string => nextCursor.encode(protector, bindingOf(caller), position);

export function decodeRequestLogCursor(protector: DataProtector, caller: Caller, cursor: string): number {
  const position = /^[A-Za-z0-9_-]{32}$/.test(cursor) ? readIssuedCursor(protector, caller, cursor) : readNextCursor(protector, caller, cursor);
  if (position === null) {
    throw new PartnerError('invalid_request', 'The cursor is not valid for this API client; use next_cursor from a previous response, or omit it to start from the latest entries.', {
      details: [{ field: 'after', issue: 'invalid_cursor' }],
    });
  }
  return position;
}

function readIssuedCursor(protector: DataProtector, caller: Caller, cursor: string): number | null {
  const bytes = Buffer.from(cursor, 'base64url');
  const position = bytes.length === CURSOR_BYTES ? Number(bytes.readBigUInt64BE(0)) : -1;
  return position >= 0 && Number.isSafeInteger(position) && timingSafeEqual(bytes.subarray(8), tagOf(protector, caller, position)) ? position : null;
}

function readNextCursor(protector: DataProtector, caller: Caller, cursor: string): number | null {
  const decoded = nextCursor.decode(protector, bindingOf(caller), cursor);
  return decoded.ok ? decoded.position : null;
}

export interface RequestLogFilter {
  after?: string;
  status_class?: '2xx' | '3xx' | '4xx' | '5xx';
  route?: string;
  request_id?: string;
  /** Logged at or after `since`, before `until` (ISO 8601 with an offset). */
  since?: string;
  until?: string;
  /** Any of these methods, any of these sources. */
  method?: readonly RequestLogMethod[];
  source?: readonly RequestLogSource[];
  /** The display prefix of the key used, exactly. */
  key_prefix?: string;
  /** Text found in the stored bodies (case-insensitive), of entries whose bodies this key may read. */
  q?: string;
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
  source: sourceOfRow(row.door),
});

/** The stored source (the `door` column); a value this release does not know reads as `rest`, as `lop` did before it was one. */
const sourceOfRow = (door: string): RequestLogSource => ((REQUEST_LOG_SOURCES as readonly string[]).includes(door) ? (door as RequestLogSource) : 'rest');

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
 * The most logged requests one filtered read examines. A filter that matches little (a rare `q`,
 * bodies up to 16 KB each) would otherwise read a client's whole 7 days, up to a hundred requests a
 * second of them, on every page and every poll: seconds of a pooled connection per read, which one
 * partner could repeat until the pool was theirs. Past the window a read answers what it found.
 */
export const REQUEST_LOG_SCAN_MAX = 2_000;

/**
 * GET /v1/sandbox/request-log: without `after`, the latest `limit` entries that match; with it, the
 * entries logged after it. Oldest first either way, and `next_cursor` always present, so a tail
 * polls from it. With filters, a read examines at most REQUEST_LOG_SCAN_MAX of the caller's entries
 * (the latest ones, or those after the cursor): `has_more` then says the cursor stopped at the
 * window's end, with more entries after it to examine.
 */
export async function listRequestLog(db: Database, protector: DataProtector, caller: Caller, filter: RequestLogFilter, now = new Date()): Promise<RequestLogPage> {
  requireSandboxCaller(caller);
  const after = filter.after === undefined ? undefined : decodeRequestLogCursor(protector, caller, filter.after);
  const own = callerRows(caller, now);
  const where = [...own];
  if (filter.status_class) {
    const low = Number(filter.status_class[0]) * 100;
    where.push(gte(sandboxRequestLog.status, low), lt(sandboxRequestLog.status, low + 100));
  }
  if (filter.route !== undefined) where.push(eq(sandboxRequestLog.route, filter.route));
  if (filter.request_id !== undefined) where.push(eq(sandboxRequestLog.requestId, filter.request_id));
  where.push(...narrowing(caller, filter));
  const filtered = where.length > own.length;
  const shown = (rows: Row[]) => (filter.q === undefined ? rows : withoutUnreadableOrders(db, caller, rows));
  let rows: Row[];
  if (after === undefined) {
    // The window: the caller's latest REQUEST_LOG_SCAN_MAX entries of the time range asked (`until` reaches back).
    const oldest = filtered ? await windowEdge(db, [...own, ...timeRange(filter)], 'latest') : undefined;
    rows = (
      await db
        .select()
        .from(sandboxRequestLog)
        .where(and(...where, ...(oldest === undefined ? [] : [gte(sandboxRequestLog.id, oldest)])))
        .orderBy(desc(sandboxRequestLog.id))
        .limit(filter.limit + 1)
    ).reverse();
    // The latest page: what came before it is not "more" for a tail.
    if (rows.length > filter.limit) rows = rows.slice(1);
    const position = rows.at(-1)?.id ?? (await latestPosition(db, caller, now));
    return { entries: (await shown(rows)).map(entryOf), next_cursor: encodeRequestLogCursor(protector, caller, position), has_more: false };
  }
  const last = filtered ? await windowEdge(db, [...own, ...timeRange(filter), gt(sandboxRequestLog.id, after)], 'after') : undefined;
  rows = await db
    .select()
    .from(sandboxRequestLog)
    .where(and(...where, gt(sandboxRequestLog.id, after), ...(last === undefined ? [] : [lte(sandboxRequestLog.id, last)])))
    .orderBy(sandboxRequestLog.id)
    .limit(filter.limit + 1);
  const page = rows.slice(0, filter.limit);
  const full = rows.length > filter.limit;
  // The cursor moves past every row read, shown or not, so a follower never reads one twice: past
  // the whole window when the page did not fill before its end.
  const position = full || last === undefined ? (page.at(-1)?.id ?? after) : last;
  return { entries: (await shown(page)).map(entryOf), next_cursor: encodeRequestLogCursor(protector, caller, position), has_more: full || last !== undefined };
}

/**
 * The id of the REQUEST_LOG_SCAN_MAX-th of the caller's entries, counting from the newest
 * (`latest`) or from the first after the cursor (`after`); undefined when there are not that many,
 * so the window is everything. One walk of the client's index.
 */
async function windowEdge(db: Database, rows: SQL[], from: 'latest' | 'after'): Promise<number | undefined> {
  const [edge] = await db
    .select({ id: sandboxRequestLog.id })
    .from(sandboxRequestLog)
    .where(and(...rows))
    .orderBy(from === 'latest' ? desc(sandboxRequestLog.id) : sandboxRequestLog.id)
    .offset(REQUEST_LOG_SCAN_MAX - 1)
    .limit(1);
  return edge?.id;
}

/**
 * The filters of issue 35 (docs/request-log.md § Reading it), as conditions on the caller's own
 * rows: each is a filter of the client's index scan (sandbox_request_log_by_client, per day
 * partition, newest first or from the cursor), and `since`/`until` also leave out whole days.
 * No filter needs an index of its own: a page stops at `limit` matches or at the window of
 * REQUEST_LOG_SCAN_MAX entries, whichever comes first.
 */
function narrowing(caller: Caller, filter: RequestLogFilter): SQL[] {
  const where: SQL[] = timeRange(filter);
  if (filter.method) where.push(inArray(sandboxRequestLog.method, [...filter.method]));
  // Every source but rest is stored as its name; rest also stands for whatever else the column holds (sourceOfRow).
  if (filter.source) {
    const named = REQUEST_LOG_SOURCES.filter((source) => source !== 'rest');
    const wanted = filter.source.filter((source) => source !== 'rest');
    const sources = [...(wanted.length > 0 ? [inArray(sandboxRequestLog.door, wanted)] : []), ...(filter.source.includes('rest') ? [not(inArray(sandboxRequestLog.door, named))] : [])];
    where.push(or(...sources)!);
  }
  if (filter.key_prefix !== undefined) where.push(eq(sandboxRequestLog.keyPrefix, filter.key_prefix));
  if (filter.q !== undefined) where.push(bodiesContain(caller, filter.q));
  return where;
}

/** `since` (inclusive) to `until` (exclusive): also the bounds of a filtered read's window. */
function timeRange(filter: RequestLogFilter): SQL[] {
  const since = filter.since === undefined ? undefined : new Date(filter.since);
  const until = filter.until === undefined ? undefined : new Date(filter.until);
  if (since && until && since.getTime() >= until.getTime()) {
    throw new PartnerError('invalid_request', 'The request is not valid; see details.', {
      details: [{ field: 'until', issue: 'out_of_range', message: 'Must be later than since.' }],
    });
  }
  return [...(since ? [gte(sandboxRequestLog.occurredAt, since)] : []), ...(until ? [lt(sandboxRequestLog.occurredAt, until)] : [])];
}

/**
 * Free text in the stored bodies: a case-insensitive substring of their JSON text as PostgreSQL
 * writes it (`{"data": {"lifecycle": "pending"}}`, as the console's detail shows it), so a field's
 * name matches as well as a kept value, or both (`"lifecycle": "pending"`). Searched only in the
 * entries whose bodies this key may read (the detail's missing_scope rule), or a search would tell
 * what the detail withholds. position(), not LIKE: no character of the text is a wildcard. What the
 * allow-list did not keep (your text, redacted to its type and size) is not there to be found.
 */
function bodiesContain(caller: Caller, q: string): SQL {
  // A line feed between the two: JSON text has none, and `q` may not hold one, so no match spans both.
  const bodies = sqlText`lower(coalesce(${sandboxRequestLog.requestBody}::text, '') || chr(10) || coalesce(${sandboxRequestLog.responseBody}::text, ''))`;
  const scopes = [...caller.scopes];
  const readable = scopes.length > 0 ? or(isNull(sandboxRequestLog.scope), inArray(sandboxRequestLog.scope, scopes))! : isNull(sandboxRequestLog.scope);
  return and(readable, sqlText`position(lower(${q}) in ${bodies}) > 0`)!;
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
 * The ids in an entry's stored bodies. Paths are not stored, so an order is found by its id in the
 * bodies — every order route's bodies carry it (order_id in the order, its results, report and
 * exceptions; the FHIR bundle's references) — whichever field or depth it is in.
 */
const idsIn = (row: Row): string[] => [...new Set(`${JSON.stringify(row.requestBody ?? null)} ${JSON.stringify(row.responseBody ?? null)}`.toLowerCase().match(UUID) ?? [])];

/**
 * Which of these ids are orders of the caller that the caller may no longer read (their program
 * withdrawn: the order reads' own rule, orderProgramGranted): the log must not keep serving, nor
 * let a search find, what GET order answers 404 for.
 */
async function unreadableOrders(db: Database, caller: Caller, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const found = await db
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
    );
  return new Set(found.map((order) => order.id));
}

/** Whether an entry's bodies are about an order the caller may no longer read. */
async function mentionsUnreadableOrder(db: Database, caller: Caller, row: Row): Promise<boolean> {
  return (await unreadableOrders(db, caller, idsIn(row))).size > 0;
}

/**
 * A free-text search's page less the entries whose bodies are about an order the caller may no
 * longer read: the detail withholds those bodies, so a search must not find text in them either.
 * One query for the page; the SQL already left out the bodies of routes the key lacks the scope for.
 */
async function withoutUnreadableOrders(db: Database, caller: Caller, rows: Row[]): Promise<Row[]> {
  const unreadable = await unreadableOrders(db, caller, [...new Set(rows.flatMap(idsIn))]);
  return unreadable.size === 0 ? rows : rows.filter((row) => !idsIn(row).some((id) => unreadable.has(id)));
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
