import { timingSafeEqual } from 'node:crypto';
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import { events, eventStreams, preparedStatement, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { PartnerError } from '../http/errors';
import type { DataProtector } from '../security/protector';
import { toPartnerEvent, type Stream } from './append';
import type { PartnerEvent } from './events.schemas';

export const EVENTS_DEFAULT_LIMIT = 100;
export const EVENTS_MAX_LIMIT = 500;

const CURSOR_PURPOSE = 'partner-service/event-cursor';
const CURSOR_VERSION = 2;
/** version (1) + stream tag (8) + sequence (8) + tag (16) bytes: 44 base64url characters. */
const CURSOR_BYTES = 33;

const streamName = (stream: Stream) => `${stream.clientId}:${stream.environment}`;
const streamTag = (protector: DataProtector, stream: Stream) => protector.digest(CURSOR_PURPOSE, `stream:${streamName(stream)}`).subarray(0, 8);
const positionTag = (protector: DataProtector, stream: Stream, sequence: number) => protector.digest(CURSOR_PURPOSE, `position:${streamName(stream)}:${sequence}`).subarray(0, 16);

const cursorError = (issue: string, message: string) => new PartnerError('invalid_request', message, { details: [{ field: 'cursor', issue }] });

/**
 * Cursors are opaque to partners and bound to their stream (client and environment, not the
 * key: keys rotate, the stream stays): the last sequence seen, a tag naming the stream and an
 * HMAC over both, under a subkey of the service's master key, so a cursor survives restarts,
 * holds on every replica, and cannot be forged or carried to another stream.
 */
export function encodeCursor(protector: DataProtector, stream: Stream, sequence: number): string {
  const bytes = Buffer.alloc(CURSOR_BYTES);
  bytes.writeUInt8(CURSOR_VERSION, 0);
  streamTag(protector, stream).copy(bytes, 1);
  bytes.writeBigUInt64BE(BigInt(sequence), 9);
  positionTag(protector, stream, sequence).copy(bytes, 17);
  return bytes.toString('base64url');
}

/** The sequence a cursor stands for in `stream`; 400 invalid_request naming the cursor otherwise. */
export function decodeCursor(protector: DataProtector, stream: Stream, cursor: string): number {
  const bytes = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0);
  if (/^seq:[0-9]+$/.test(bytes.toString('latin1'))) {
    // Issued before cursors were bound to their stream: it cannot be told whose it is (docs/events.md).
    throw cursorError(
      'cursor_format_retired',
      'This cursor was issued before cursors were bound to their stream and is no longer accepted; read from the beginning (omit cursor) and skip the sequences you have processed.',
    );
  }
  if (bytes.length !== CURSOR_BYTES || bytes.readUInt8(0) !== CURSOR_VERSION || bytes.toString('base64url') !== cursor) {
    throw cursorError('invalid_cursor', 'The cursor is not valid; use next_cursor from a previous response, or omit it to start from the beginning.');
  }
  if (!timingSafeEqual(bytes.subarray(1, 9), streamTag(protector, stream))) {
    throw cursorError('cursor_of_another_stream', 'The cursor belongs to another stream (another API client or environment); use a next_cursor this stream returned.');
  }
  const sequence = bytes.readBigUInt64BE(9);
  if (sequence > BigInt(Number.MAX_SAFE_INTEGER) || !timingSafeEqual(bytes.subarray(17), positionTag(protector, stream, Number(sequence)))) {
    throw cursorError('invalid_cursor', 'The cursor is not valid; use next_cursor from a previous response, or omit it to start from the beginning.');
  }
  return Number(sequence);
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
