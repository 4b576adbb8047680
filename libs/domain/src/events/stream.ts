import { and, eq, getTableColumns, inArray } from 'drizzle-orm';
import { events, eventStreams, sqlOf, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { cursorCodec, sequencePosition } from '../http/cursor';
import { PartnerError } from '../http/errors';
import { prerendered } from '../http/prerendered';
import type { DataProtector } from '../security/protector';
import { toPartnerEvent, type Stream } from './append';
import type { PartnerEvent } from './events.schemas';

/**
 * Cursors are opaque to partners and bound to their stream (client and environment, not the
 * key: keys rotate, the stream stays): the last sequence seen, a tag naming the stream and an
 * HMAC over both (http/cursor.ts), so a cursor survives restarts, holds on every replica, and
 * cannot be forged or carried to another stream. Version 2, 33 bytes: 44 base64url characters.
 */
const eventCursor = cursorCodec({ purpose: 'partner-service/event-cursor', version: 2, position: sequencePosition });

const streamName = (stream: Stream) => `${stream.clientId}:${stream.environment}`;

/**
 * Which rows of events a paged read returns, already checked by its caller (authentication gave
 * the stream; a narrower read has checked its narrowing belongs to that stream). Its cursors are
 * bound to it: `binding` is what their tags sign, so a cursor is refused by every other scope.
 */
export interface EventScope {
  /** The stream the rows are in: its sequences order the pages and its head bounds the cursors. */
  stream: Stream;
  /** What the scope's cursors are bound to (for the whole stream, its name as it has always been: issued cursors keep working). */
  binding: string;
  /** The stream's events of this order only; none: the whole stream. */
  orderId?: string;
  /** Why a cursor bound to another scope is refused (details[].issue cursor_of_another_stream). */
  anotherScope: string;
}

/** The whole of the caller's stream: GET /v1/events. */
export const streamScope = (stream: Stream): EventScope => ({
  stream: { clientId: stream.clientId, environment: stream.environment },
  binding: streamName(stream),
  anotherScope: 'The cursor belongs to another stream (another API client or environment); use a next_cursor this stream returned.',
});

/**
 * One order's events within its stream. The caller must have checked the order is the stream's
 * (e.g. read it scoped to the caller) before building this scope. Its cursors are bound to the
 * order: the whole stream's cursors, and another order's, are refused, so a cursor always
 * continues the list it came from (its position, a stream sequence, would mean the same in both,
 * but a client mixing them up would silently skip or repeat another list's events).
 */
export const orderEventsScope = (stream: Stream, orderId: string): EventScope => ({
  stream: { clientId: stream.clientId, environment: stream.environment },
  binding: `${streamName(stream)}:order:${orderId}`,
  orderId,
  anotherScope: "The cursor belongs to another list of events (another order, the whole stream, or another API client or environment); use a next_cursor this order's events returned.",
});

const cursorError = (issue: string, message: string) => new PartnerError('invalid_request', message, { details: [{ field: 'cursor', issue }] });

export function encodeCursor(protector: DataProtector, stream: Stream, sequence: number): string {
  return encodeScopeCursor(protector, streamScope(stream), sequence);
}

/** The sequence a cursor stands for in `stream`; 400 invalid_request naming the cursor otherwise. */
export function decodeCursor(protector: DataProtector, stream: Stream, cursor: string): number {
  return decodeScopeCursor(protector, streamScope(stream), cursor);
}

/** A cursor of `scope` at `sequence` (as readEventPage hands out). */
export function encodeScopeCursor(protector: DataProtector, scope: EventScope, sequence: number): string {
  return eventCursor.encode(protector, scope.binding, sequence);
}

function decodeScopeCursor(protector: DataProtector, scope: EventScope, cursor: string): number {
  if (/^[A-Za-z0-9_-]{1,64}$/.test(cursor) && /^seq:[0-9]+$/.test(Buffer.from(cursor, 'base64url').toString('latin1'))) {
    // Issued before cursors were bound to their stream: it cannot be told whose it is (docs/events.md).
    throw cursorError(
      'cursor_format_retired',
      'This cursor was issued before cursors were bound to their stream and is no longer accepted; read from the beginning (omit cursor) and skip the sequences you have processed.',
    );
  }
  const decoded = eventCursor.decode(protector, scope.binding, cursor);
  if (decoded.ok) return decoded.position;
  if (decoded.refusal === 'another_list') throw cursorError('cursor_of_another_stream', scope.anotherScope);
  throw cursorError('invalid_cursor', 'The cursor is not valid; use next_cursor from a previous response, or omit it to start from the beginning.');
}

export interface EventPage {
  events: PartnerEvent[];
  next_cursor: string;
  has_more: boolean;
}

/**
 * A page of a stream as its rows' raw bytes: `select *` whatever the schema's columns (this
 * release also serves the schema before 0014 added events.body), and nothing parsed but what the
 * page needs — each event's stored JSON is sent as it is. (An order's rows are found through the
 * stream's index, past every other order's: a route reading them needs an index on
 * (client_id, environment, order_id, sequence) first.)
 */
async function pageRows(db: Database, scope: EventScope, after: number, rows: number) {
  const { stream, orderId } = scope;
  if (orderId === undefined) {
    return sqlOf(db)`
    select * from events where client_id = ${stream.clientId} and environment = ${stream.environment} and sequence > ${after}
    order by sequence limit ${rows}`.raw();
  }
  return sqlOf(db)`
    select * from events where client_id = ${stream.clientId} and environment = ${stream.environment} and order_id = ${orderId} and sequence > ${after}
    order by sequence limit ${rows}`.raw();
}

/** The stream's first kept sequence after `after` (whatever the scope's narrowing), if any. */
async function firstKeptAfter(db: Database, stream: Stream, after: number): Promise<number | undefined> {
  const [row] = await sqlOf(db)`
    select sequence from events where client_id = ${stream.clientId} and environment = ${stream.environment} and sequence > ${after}
    order by sequence limit 1`;
  return row ? Number(row.sequence) : undefined;
}

/** Events written before 0014 (or by the previous release during a rollout) have no stored JSON: rendered from their columns. */
async function renderedWithoutBody(db: Database, ids: string[]): Promise<Map<string, string>> {
  const { body: _body, createdAt: _createdAt, ...columns } = getTableColumns(events);
  const rows = await db.select(columns).from(events).where(inArray(events.id, ids));
  return new Map(rows.map((row) => [row.id, JSON.stringify(toPartnerEvent(row))]));
}

/**
 * One page of the caller's stream after the cursor, in sequence order. A cursor past the end of
 * the stream is refused rather than answered with an empty page: it would silently skip every
 * event up to its position (a restored database, a cursor from another deployment).
 *
 * The page is pre-rendered (http/prerendered.ts): the REST door sends the events' stored bytes,
 * which are byte for byte the webhook bodies of the same events; its `events` are parsed from
 * them only if something reads them as objects.
 */
export async function readEvents(db: Database, protector: DataProtector, caller: Caller, cursor: string | undefined, limit: number): Promise<EventPage> {
  return (await readEventPage(db, protector, streamScope(caller), cursor, limit)).page;
}

/**
 * The one cursor-paged read of events: a page of `scope`'s rows after the cursor (bound to the
 * scope), with how many events it holds (a waiting read waits only on an empty page: events/wait.ts).
 * Every check of readEvents holds in every scope: a cursor ahead of the stream, or one whose next
 * events of the stream were archived, is refused.
 */
export async function readEventPage(db: Database, protector: DataProtector, scope: EventScope, cursor: string | undefined, limit: number): Promise<{ page: EventPage; size: number }> {
  const { stream } = scope;
  const after = cursor === undefined ? 0 : decodeScopeCursor(protector, scope, cursor);
  let rows = await pageRows(db, scope, after, limit + 1);
  if (rows.length === 0 && after > 0) {
    const head = await headOf(db, stream);
    if (after > head) {
      throw cursorError('cursor_ahead_of_stream', 'The cursor is ahead of the end of this stream; use a next_cursor this stream returned, or omit it to start from the beginning.');
    }
    // Events committed between the page and the head are visible now; none at all means archived.
    if (after < head) rows = await pageRows(db, scope, after, limit + 1);
    if (rows.length === 0 && after < head) {
      // A narrowed scope's page is also empty once its rows are all read: the stream's tells.
      const kept = scope.orderId === undefined ? undefined : await firstKeptAfter(db, stream, after);
      if (kept === undefined || kept > after + 1) throw eventsArchived(after, kept);
    }
  }
  const column = (name: string) => rows.columns.findIndex((c) => c.name === name);
  const [idAt, sequenceAt, bodyAt] = [column('id'), column('sequence'), column('body')];
  // Sequences are dense and committed in order (append.ts), so a reader never sees n+2 without
  // n+1: a page starting past the cursor's next sequence means those events were archived
  // (docs/operations.md § Partitioned history). The stream never skips them silently. A narrowed
  // scope's rows are not dense: there the stream's first kept event after the cursor tells.
  const firstSequence = rows.length > 0 ? Number(String(rows[0][sequenceAt])) : undefined;
  if (after > 0 && firstSequence !== undefined && firstSequence > after + 1) {
    const kept = scope.orderId === undefined ? firstSequence : ((await firstKeptAfter(db, stream, after)) ?? firstSequence);
    if (kept > after + 1) throw eventsArchived(after, kept);
  }
  const page = rows.slice(0, limit);
  const missing = page.filter((row) => bodyAt === -1 || row[bodyAt] === null).map((row) => String(row[idAt]));
  const rendered = missing.length > 0 ? await renderedWithoutBody(db, missing) : undefined;
  const last = page.length > 0 ? Number(String(page[page.length - 1][sequenceAt])) : after;
  const next_cursor = encodeScopeCursor(protector, scope, last);
  const has_more = rows.length > limit;
  // The response's bytes, copied from the rows' (never decoded): the events' stored JSON between
  // the page's own fields, in the schema's order (events, next_cursor, has_more).
  const parts: Buffer[] = [PAGE_START];
  page.forEach((row, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(bodyAt !== -1 && row[bodyAt] !== null ? row[bodyAt] : Buffer.from(rendered!.get(String(row[idAt]))!));
  });
  parts.push(Buffer.from(`],"next_cursor":${JSON.stringify(next_cursor)},"has_more":${has_more}}`));
  const json = Buffer.concat(parts);
  let events: PartnerEvent[] | undefined;
  const result = {
    // Parsed only if something reads the page as an object (the console's tRPC door, a test).
    get events() {
      return (events ??= (JSON.parse(json.toString('utf8')) as EventPage).events);
    },
    next_cursor,
    has_more,
  };
  return { page: prerendered(result, json), size: page.length };
}

/**
 * The events right after the cursor are no longer kept: their month was archived (detached from
 * events). 400, like every cursor the stream cannot continue from, naming the oldest kept sequence.
 * A read without a cursor starts at the oldest event kept.
 */
const eventsArchived = (after: number, oldestKept: number | undefined) =>
  cursorError(
    'cursor_events_archived',
    `The events after this cursor (from sequence ${after + 1}${oldestKept === undefined ? '' : ` to ${oldestKept - 1}`}) are no longer kept: they were archived. Re-read your orders from the API, which is authoritative, then read the stream without a cursor: it starts at the oldest event kept${oldestKept === undefined ? '' : ` (sequence ${oldestKept})`}.`,
  );

const PAGE_START = Buffer.from('{"events":[');
const COMMA = Buffer.from(',');

/** The last sequence written to the stream (0 when it has none); only asked on an empty page. */
async function headOf(db: Database, stream: Stream): Promise<number> {
  const [row] = await db
    .select({ last: eventStreams.lastSequence })
    .from(eventStreams)
    .where(and(eq(eventStreams.clientId, stream.clientId), eq(eventStreams.environment, stream.environment)));
  return row ? Number(row.last) : 0;
}
