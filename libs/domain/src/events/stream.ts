import { and, asc, eq, gt, sql } from 'drizzle-orm';
import { events, preparedStatement, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { PartnerError } from '../http/errors';
import { toPartnerEvent } from './append';
import type { PartnerEvent } from './events.schemas';

export const EVENTS_DEFAULT_LIMIT = 100;
export const EVENTS_MAX_LIMIT = 500;

/** Cursors are opaque to partners: base64url of the last sequence they have seen. */
export function encodeCursor(sequence: number): string {
  return Buffer.from(`seq:${sequence}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): number {
  const text = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const match = /^seq:(0|[1-9][0-9]{0,15})$/.exec(text);
  if (!match) {
    throw new PartnerError('invalid_request', 'The cursor is not valid; use next_cursor from a previous response, or omit it to start from the beginning.', {
      details: [{ field: 'cursor', issue: 'invalid_cursor' }],
    });
  }
  return Number(match[1]);
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

/** One page of the caller's stream after the cursor, in sequence order. */
export async function readEvents(db: Database, caller: Caller, cursor: string | undefined, limit: number): Promise<EventPage> {
  const after = cursor === undefined ? 0 : decodeCursor(cursor);
  const rows = await streamPage(db).execute({ clientId: caller.clientId, environment: caller.environment, after, rows: limit + 1 });
  const page = rows.slice(0, limit).map(toPartnerEvent);
  const last = page.length > 0 ? page[page.length - 1].sequence : after;
  return { events: page, next_cursor: encodeCursor(last), has_more: rows.length > limit };
}
