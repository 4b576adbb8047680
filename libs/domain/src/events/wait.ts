import type { Database } from '@lop/db';
import { PartnerError } from '../http/errors';
import type { DataProtector } from '../security/protector';
import { readEventPage, type EventPage, type EventScope } from './stream';
import type { EventWaiters } from './waiters';

/** The longest `wait` of GET /v1/events, in seconds: under the 60 s idle timeout of common proxies and clients. */
export const EVENTS_MAX_WAIT_SECONDS = 30;

/**
 * Over the stream's cap its own held reads are the reason, and they end within the longest wait;
 * over the process's, another API process may have room at once.
 */
const RETRY_AFTER_SECONDS = { stream_full: 5, process_full: 1 } as const;

const tooManyWaiting = (cap: 'stream_full' | 'process_full') =>
  new PartnerError(
    'rate_limited',
    cap === 'stream_full'
      ? `Too many reads of this API client and environment are waiting for events at once; retry after ${RETRY_AFTER_SECONDS[cap]} seconds, or read without wait.`
      : `Too many reads are waiting for events on this server; retry after ${RETRY_AFTER_SECONDS[cap]} second.`,
    { details: [{ field: 'wait', issue: 'too_many_waiting_reads' }], headers: { 'Retry-After': String(RETRY_AFTER_SECONDS[cap]) } },
  );

export interface WaitingRead {
  /** The pool the read was routed to (a replica's, or the primary's). */
  db: Database;
  /** The primary's: read after a wake, since a replica may not have replayed the commit yet. */
  primary: Database;
  protector: DataProtector;
  /** Which events (already checked): a commit to its stream wakes the read, which then reads its page again. */
  scope: EventScope;
  cursor: string | undefined;
  limit: number;
  /** Seconds to wait for an event when the page is empty (0: answer at once). */
  waitSeconds: number;
  /** This process's held reads; none: no read waits. */
  waiters: EventWaiters | undefined;
  /** A signal aborted when the client goes away: its place is given back at once. */
  clientGone?: () => AbortSignal;
}

/**
 * GET /v1/events with `wait`: a page with events, or a refused cursor, is answered at once; an
 * empty page waits, holding no database connection, until a commit to the scope's stream wakes it
 * (then the page is read again, on the primary) or until the deadline, when it is answered empty
 * with its next_cursor. The place is taken before the first read, so a commit between that read
 * and the wait still wakes it. Past a cap, an empty page is 429 `too_many_waiting_reads`.
 */
export async function readEventsWaiting(read: WaitingRead): Promise<EventPage> {
  const readFrom = (db: Database) => readEventPage(db, read.protector, read.scope, read.cursor, read.limit);
  if (read.waitSeconds === 0 || !read.waiters) return (await readFrom(read.db)).page;
  const signal = read.clientGone?.();
  const deadline = Date.now() + read.waitSeconds * 1000;
  const place = read.waiters.enter(read.scope.stream);
  if (typeof place === 'string') {
    const first = await readFrom(read.db);
    if (first.size > 0 || place === 'closing') return first.page;
    read.waiters.refusals[place]++;
    throw tooManyWaiting(place);
  }
  const leave = () => place.release();
  if (signal?.aborted) leave();
  signal?.addEventListener('abort', leave, { once: true });
  try {
    const first = await readFrom(read.db);
    if (first.size > 0) return first.page;
    while ((await place.next(deadline)) === 'woken') {
      const fresh = await readFrom(read.primary);
      if (fresh.size > 0) return fresh.page;
    }
    return first.page;
  } finally {
    signal?.removeEventListener('abort', leave);
    place.leave();
  }
}
