import { EVENT_TYPES } from '@lop/contract';
import { ApiError, must, toApiError, UnreachableError, UsageError, type Api, type EventType, type PartnerEvent } from './api';
import { InterruptedError, sleep } from './forward';
import { clock, type Output } from './output';
import { rawArrayElements } from './raw-json';

/** An event and its exact text in the response: what a webhook delivery carries as its body. */
export interface StreamEvent {
  event: PartnerEvent;
  raw: string;
}

export interface StreamPage {
  events: StreamEvent[];
  nextCursor: string;
  hasMore: boolean;
}

/** The API's maximum page size (docs/events.md); used to reach the end of the stream quickly. */
export const MAX_PAGE = 500;

/**
 * How long a follower's read of an empty page waits for the next event (GET /v1/events?wait), so
 * an event arrives as soon as it commits rather than at the next poll: under the 30 s after which
 * every call gives up (api.ts), with room for a slow network.
 */
export const FOLLOW_WAIT_SECONDS = 20;

/**
 * One page of GET /v1/events after `cursor`, with each event's source text. With `follow`, an empty
 * page is held by the service until an event commits or `waitSeconds` pass; `stop` ends the wait
 * at once (InterruptedError).
 */
export async function readPage(api: Api, cursor: string | undefined, limit: number, follow?: { waitSeconds: number; stop: AbortSignal }): Promise<StreamPage> {
  const result = await api.client
    .GET('/api/public/partner/v1/events', {
      params: { query: { ...(cursor === undefined ? {} : { cursor }), limit, ...(follow ? { wait: follow.waitSeconds } : {}) } },
      parseAs: 'text',
      ...(follow ? { signal: follow.stop } : {}),
    })
    .catch((error: unknown) => {
      throw follow?.stop.aborted ? new InterruptedError() : error;
    });
  if (result.error !== undefined) throw toApiError(result.response, result.error);
  const text = must(result);
  const page = (JSON.parse(text) as { data: { events: PartnerEvent[]; next_cursor: string; has_more: boolean } }).data;
  const raws = rawArrayElements(text, ['data', 'events']);
  // The scanner and JSON.parse must agree on every event, or the bytes forwarded are not the event.
  if (raws.length !== page.events.length || raws.some((raw, i) => (JSON.parse(raw) as PartnerEvent).event_id !== page.events[i].event_id)) {
    throw new Error('could not locate each event in the response text');
  }
  return { events: page.events.map((event, i) => ({ event, raw: raws[i] })), nextCursor: page.next_cursor, hasMore: page.has_more };
}

/**
 * The cursor at the end of the stream as it is now ("from now"), and how many events precede it.
 * Cursors are opaque, so the only way there is to page through.
 */
export async function endOfStream(api: Api, from?: string): Promise<{ cursor: string; skipped: number }> {
  let cursor = from;
  let skipped = 0;
  for (;;) {
    const page = await readPage(api, cursor, MAX_PAGE);
    skipped += page.events.length;
    cursor = page.nextCursor;
    if (!page.hasMore) return { cursor, skipped };
  }
}

/** `--events a,b`: known types only, so a typo is a usage error rather than a silent filter. */
export function parseEventTypes(list: string): Set<EventType> {
  const types = list
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  const unknown = types.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (types.length === 0 || unknown.length > 0) {
    throw new Error(`unknown event type${unknown.length === 1 ? '' : 's'} ${unknown.join(', ') || '(none given)'}; one or more of: ${EVENT_TYPES.join(', ')}`);
  }
  return new Set(types as EventType[]);
}

/** Longest wait between tries while the API is unreachable. */
export const MAX_OUTAGE_WAIT_MS = 10_000;

/** The service is restarting, down or busy: worth waiting for rather than giving up. */
export const isTransient = (error: unknown) => error instanceof UnreachableError || (error instanceof ApiError && (error.status === 429 || error.status >= 500));

/**
 * Runs `call` until the service answers, waiting 1 s, 2 s… (at most 10 s) while it is unreachable
 * or answers 429/5xx, and saying so; any other failure is thrown. InterruptedError when stopped.
 */
export async function whenReachable<T>(call: () => Promise<T>, output: Output, json: boolean, stop: AbortSignal, firstWaitMs = 1000): Promise<T> {
  let waitMs = firstWaitMs;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!isTransient(error)) throw error;
      const message = error instanceof ApiError ? `${error.code}: ${error.message}` : (error as Error).message;
      if (json) output.out(JSON.stringify({ kind: 'stream_error', time: new Date().toISOString(), message, retry_in_ms: waitMs }));
      else output.err(output.style.yellow(`${clock()}  waiting for the service (${message}); trying again in ${waitMs / 1000} s`));
      await sleep(waitMs, stop);
      waitMs = Math.min(waitMs * 2, MAX_OUTAGE_WAIT_MS);
    }
  }
}

/**
 * A cursor the service refuses (another stream's, one ahead of the stream, an old seq:N one) is
 * a bad value given on the command line: a usage error (exit 2) naming the service's issue.
 */
export function refusedCursor(error: unknown, option: string): unknown {
  if (!(error instanceof ApiError) || error.status !== 400) return error;
  const detail = error.details.find((d) => d.field === 'cursor');
  if (!detail) return error;
  return new UsageError(`${option} was refused by the service: ${error.message}${error.requestId ? ` (request_id ${error.requestId})` : ''}`, detail.issue ?? 'invalid_cursor', error.body);
}
