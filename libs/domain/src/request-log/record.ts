import type { Caller } from '../auth/authenticate';
import { redactValue } from '../security/redaction';

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
  /** The parsed JSON body, or undefined when the request had none. */
  requestBody: unknown;
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
  door: string;
  scope: string | null;
  requestBody: unknown;
  responseBody: unknown;
}

/**
 * A body as stored: redacted first (security/redaction.ts: keys, secrets and the order's personal
 * fields, at any depth), then cut to BODY_LIMIT_BYTES of its redacted JSON text. Text that is not
 * JSON is never stored, only its size: it cannot be redacted field by field.
 */
export function storedBody(value: unknown): unknown {
  if (value === undefined) return null;
  const redacted = redactValue(value);
  const text = JSON.stringify(redacted);
  const bytes = Buffer.byteLength(text);
  if (bytes <= BODY_LIMIT_BYTES) return redacted;
  return { truncated: true, size_bytes: bytes, text: Buffer.from(text).subarray(0, BODY_LIMIT_BYTES).toString('utf8').replace(/\uFFFD$/, '') };
}

const notStored = (reason: string, bytes: number) => ({ not_stored: reason, size_bytes: bytes });

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

/** The row for a finished request: error code read from the envelope, bodies redacted and truncated. */
export function toRequestLogRow(request: FinishedRequest): RequestLogRow {
  const response = partnerBodyOf(request);
  const code = request.status >= 400 ? (response as { error?: { code?: unknown } } | undefined)?.error?.code : undefined;
  return {
    laboratoryId: request.caller.laboratoryId,
    clientId: request.caller.clientId,
    environment: request.caller.environment,
    requestId: request.requestId,
    occurredAt: request.occurredAt,
    method: request.method,
    route: request.route,
    status: request.status,
    errorCode: typeof code === 'string' ? code : null,
    durationMs: Math.max(0, Math.round(request.durationMs)),
    keyPrefix: request.caller.keyPrefix,
    door: request.door,
    scope: request.scope,
    requestBody: storedBody(request.requestBody),
    responseBody: storedBody(response),
  };
}

