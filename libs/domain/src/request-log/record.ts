import { LOP_USER_AGENT_PRODUCT, type RequestLogSource } from '@lop/contract';
import type { Caller } from '../auth/authenticate';
import { ERROR_CODES } from '../http/errors';
import { allowListedBodies, NO_BODIES, sentStrings, type RequestLogBodies } from './allow-list';

/** Stored body size, after redaction: what a person reads in the console, not an archive. */
export const BODY_LIMIT_BYTES = 8 * 1024;
/** The most of a response the transport keeps in memory for the log; past it the body is not stored at all. */
export const CAPTURE_LIMIT_BYTES = 128 * 1024;
/** How long the log is kept (the retention job prunes past it, and reads never show older). */
export const REQUEST_LOG_RETENTION_DAYS = 7;

/** What the transport hands over once a sandbox request's response has finished: nothing parsed or redacted yet. */
export interface FinishedRequest {
  caller: Caller;
  requestId: string;
  occurredAt: Date;
  method: string;
  /** The REST route template the request (or the console's call) stands for. */
  route: string;
  /** The scope the route needs, or null. */
  scope: string | null;
  status: number;
  durationMs: number;
  door: 'rest' | 'console';
  /** Who sent it (sourceOf): what a reader filters by, e.g. to hide lop's own polling. */
  source: RequestLogSource;
  /** The parsed JSON body, or undefined when the request had none. */
  requestBody: unknown;
  /**
   * The URL as requested (path and query string) and, on the console's door, its whole tRPC input:
   * never stored, only read for strings an error sentence repeats (allow-list.ts).
   */
  url?: string;
  sentInput?: unknown;
  /** The request body's size as sent (Content-Length), for the writer's memory budget. */
  requestBytes: number;
  /** The response as sent, up to CAPTURE_LIMIT_BYTES; `responseBytes` counts all of it. */
  responseText: string;
  responseBytes: number;
}

export interface RequestLogRow {
  laboratoryId: string;
  clientId: string;
  environment: 'sandbox' | 'production';
  requestId: string;
  occurredAt: Date;
  method: string;
  route: string;
  status: number;
  errorCode: string | null;
  durationMs: number;
  keyPrefix: string;
  source: RequestLogSource;
  scope: string | null;
  requestBody: unknown;
  responseBody: unknown;
}

/**
 * A body as stored, once allow-listed (allow-list.ts): cut to BODY_LIMIT_BYTES of its JSON text.
 * Text that is not JSON is never stored, only its size: it cannot be allow-listed field by field.
 */
export function storedBody(value: unknown): unknown {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text);
  if (bytes <= BODY_LIMIT_BYTES) return value;
  return { truncated: true, size_bytes: bytes, text: Buffer.from(text).subarray(0, BODY_LIMIT_BYTES).toString('utf8').replace(/\uFFFD$/, '') };
}

/** The strings of a URL as the partner sent them: each path segment, each query name and value (and the console's JSON `input`). */
function urlStrings(url: string | undefined): unknown[] {
  if (!url) return [];
  const [path, query = ''] = url.split('?', 2);
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  const strings: unknown[] = path.split('/').map(decode);
  for (const [name, value] of new URLSearchParams(query)) {
    strings.push(name, value);
    if (name === 'input') {
      try {
        strings.push(JSON.parse(value));
      } catch {
        // Not JSON: the text itself is already listed.
      }
    }
  }
  return strings;
}
/**
 * Where a request came from: the console's door, or on REST `lop` when its User-Agent is lop's
 * (`lop/<version>`, RFC 9110's product token), else `rest`. A label the partner reads in its own
 * log, not a proof: any client may send any User-Agent.
 */
export function sourceOf(door: FinishedRequest['door'], userAgent: string | undefined): RequestLogSource {
  if (door === 'console') return 'console';
  return userAgent?.startsWith(`${LOP_USER_AGENT_PRODUCT}/`) ? 'lop' : 'rest';
}

/** The service's own note in place of a body it did not keep: stored as it is. */
const notStoredNotes = new WeakSet<object>();
const notStored = (reason: string, bytes: number) => {
  const note = { not_stored: reason, size_bytes: bytes };
  notStoredNotes.add(note);
  return note;
};

/**
 * The body the partner would read on REST. The console's tRPC door wraps it: a success in
 * `result.data`, a failure's REST envelope in `error.data.partner` (trpc.ts's error formatter).
 */
function partnerBodyOf(request: FinishedRequest): unknown {
  if (request.responseBytes > CAPTURE_LIMIT_BYTES) return notStored('too_large', request.responseBytes);
  if (request.responseText === '') return undefined;
  let parsed: any;
  try {
    parsed = JSON.parse(request.responseText);
  } catch {
    return notStored('not_json', request.responseBytes);
  }
  if (request.door === 'console') return request.status >= 400 ? parsed?.error?.data?.partner : parsed?.result?.data;
  return parsed;
}

/**
 * The row for a finished request: error code read from the envelope, bodies allow-listed and
 * truncated. `bodies`: the allow-list's table (routers/request-log-bodies.ts); without it, no
 * body value is kept.
 */
export function toRequestLogRow(request: FinishedRequest, bodies: RequestLogBodies = NO_BODIES): RequestLogRow {
  const response = partnerBodyOf(request);
  const code = request.status >= 400 ? (response as { error?: { code?: unknown } } | undefined)?.error?.code : undefined;
  const kept = allowListedBodies(bodies, {
    method: request.method,
    route: request.route,
    status: request.status,
    requestBody: request.requestBody,
    responseBody: response,
    sent: () => sentStrings(request.requestBody, request.sentInput, urlStrings(request.url)),
  });
  return {
    laboratoryId: request.caller.laboratoryId,
    clientId: request.caller.clientId,
    environment: request.caller.environment,
    requestId: request.requestId,
    occurredAt: request.occurredAt,
    method: request.method,
    route: request.route,
    status: request.status,
    errorCode: typeof code === 'string' && Object.hasOwn(ERROR_CODES, code) ? code : null,
    durationMs: Math.max(0, Math.round(request.durationMs)),
    keyPrefix: request.caller.keyPrefix,
    source: request.source,
    scope: request.scope,
    requestBody: storedBody(kept.request),
    responseBody: storedBody(response && typeof response === 'object' && notStoredNotes.has(response) ? response : kept.response),
  };
}

