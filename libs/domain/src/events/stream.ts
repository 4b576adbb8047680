import { and, asc, eq, gt } from 'drizzle-orm';
import { events, type Database } from '@lop/db';
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

/** One page of the caller's stream after the cursor, in sequence order. */
export async function readEvents(db: Database, caller: Caller, cursor: string | undefined, limit: number): Promise<EventPage> {
  const after = cursor === undefined ? 0 : decodeCursor(cursor);
  const rows = await db
    .select()
    .from(events)
    .where(and(eq(events.clientId, caller.clientId), eq(events.environment, caller.environment), gt(events.sequence, after)))
    .orderBy(asc(events.sequence))
    .limit(limit + 1);
  const page = rows.slice(0, limit).map(toPartnerEvent);
  const last = page.length > 0 ? page[page.length - 1].sequence : after;
  return { events: page, next_cursor: encodeCursor(last), has_more: rows.length > limit };
}
