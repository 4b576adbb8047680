import { and, asc, eq, gt, sql } from 'drizzle-orm';
import { events, eventStreams, preparedStatement, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { cursorCodec, sequencePosition } from '../http/cursor';
import { PartnerError } from '../http/errors';
import type { DataProtector } from '../security/protector';
import { toPartnerEvent, type Stream } from './append';
import type { PartnerEvent } from './events.schemas';

export const EVENTS_DEFAULT_LIMIT = 100;
export const EVENTS_MAX_LIMIT = 500;

/**
 * Cursors are opaque to partners and bound to their stream (client and environment, not the
 * key: keys rotate, the stream stays): the last sequence seen, a tag naming the stream and an
 * HMAC over both (http/cursor.ts), so a cursor survives restarts, holds on every replica, and
 * cannot be forged or carried to another stream. Version 2, 33 bytes: 44 base64url characters.
 */
const eventCursor = cursorCodec({ purpose: 'partner-service/event-cursor', version: 2, position: sequencePosition });

const streamName = (stream: Stream) => `${stream.clientId}:${stream.environment}`;

const cursorError = (issue: string, message: string) => new PartnerError('invalid_request', message, { details: [{ field: 'cursor', issue }] });

export function encodeCursor(protector: DataProtector, stream: Stream, sequence: number): string {
  return eventCursor.encode(protector, streamName(stream), sequence);
}

/** The sequence a cursor stands for in `stream`; 400 invalid_request naming the cursor otherwise. */
export function decodeCursor(protector: DataProtector, stream: Stream, cursor: string): number {
  if (/^[A-Za-z0-9_-]{1,64}$/.test(cursor) && /^seq:[0-9]+$/.test(Buffer.from(cursor, 'base64url').toString('latin1'))) {
    // Issued before cursors were bound to their stream: it cannot be told whose it is (docs/events.md).
    throw cursorError(
      'cursor_format_retired',
      'This cursor was issued before cursors were bound to their stream and is no longer accepted; read from the beginning (omit cursor) and skip the sequences you have processed.',
    );
  }
  const decoded = eventCursor.decode(protector, streamName(stream), cursor);
  if (decoded.ok) return decoded.position;
  if (decoded.refusal === 'another_list') {
    throw cursorError('cursor_of_another_stream', 'The cursor belongs to another stream (another API client or environment); use a next_cursor this stream returned.');
  }
  throw cursorError('invalid_cursor', 'The cursor is not valid; use next_cursor from a previous response, or omit it to start from the beginning.');
}

export interface EventPage {
  events: PartnerEvent[];
  next_cursor: string;
  has_more: boolean;
}

/**
 * A page of a stream, built once and run as a named prepared statement (like GET order's): a
 * reader follows a stream page after page, and building the query each time was CPU for nothing.
 */
const streamPage = preparedStatement((db) =>
  db
    .select()
    .from(events)
    .where(and(eq(events.clientId, sql.placeholder('clientId')), eq(events.environment, sql.placeholder('environment')), gt(events.sequence, sql.placeholder('after'))))
    .orderBy(asc(events.sequence))
    .limit(sql.placeholder('rows'))
    .prepare('partner_event_page'),
);

/**
 * One page of the caller's stream after the cursor, in sequence order. A cursor past the end of
 * the stream is refused rather than answered with an empty page: it would silently skip every
 * event up to its position (a restored database, a cursor from another deployment).
 */
export async function readEvents(db: Database, protector: DataProtector, caller: Caller, cursor: string | undefined, limit: number): Promise<EventPage> {
  const stream: Stream = { clientId: caller.clientId, environment: caller.environment };
  const after = cursor === undefined ? 0 : decodeCursor(protector, stream, cursor);
  const rows = await streamPage(db).execute({ clientId: stream.clientId, environment: stream.environment, after, rows: limit + 1 });
  if (rows.length === 0 && after > 0 && after > (await headOf(db, stream))) {
    throw cursorError('cursor_ahead_of_stream', 'The cursor is ahead of the end of this stream; use a next_cursor this stream returned, or omit it to start from the beginning.');
  }
  const page = rows.slice(0, limit).map(toPartnerEvent);
  const last = page.length > 0 ? page[page.length - 1].sequence : after;
  return { events: page, next_cursor: encodeCursor(protector, stream, last), has_more: rows.length > limit };
}

/** The last sequence written to the stream (0 when it has none); only asked on an empty page. */
async function headOf(db: Database, stream: Stream): Promise<number> {
  const [row] = await db
    .select({ last: eventStreams.lastSequence })
    .from(eventStreams)
    .where(and(eq(eventStreams.clientId, stream.clientId), eq(eventStreams.environment, stream.environment)));
  return row ? Number(row.last) : 0;
}
