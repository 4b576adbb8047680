import type { ErrorCode } from '@lop/contract';
import { TRPCError } from '@trpc/server';
import { ERROR_CODES, PartnerError, type ErrorBody, type ErrorDetail } from './errors';
import { detailsFromZodIssues } from './zod-issues';

export interface ErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: ErrorBody;
  /** True when the failure is ours (500): the caller logs it with the request id. */
  unexpected: boolean;
  /** Set when the answer is right but the cause deserves a look: the caller logs it as a warning with this sentence. */
  warning?: string;
}

// postgres.js / node network failures meaning "the database is unreachable right now" (postgres.js
// hands a socket's own error to the queries on it: EPIPE when a write meets a dropped connection), and the
// query timeouts meaning "it is not answering in time" (QUERY_TIMEOUT: ours, libs/db/src/query-timeouts.ts,
// whose fail-fast errors carry one of these codes; 57014: statement_timeout; 25P03: idle_in_transaction_session_timeout).
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', '53300', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'QUERY_TIMEOUT', '57014', '25P03']);

function hasCode(error: unknown, codes: ReadonlySet<string>): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && codes.has(code)) return true;
  }
  return false;
}

const isDatabaseUnavailable = (error: unknown) => hasCode(error, UNAVAILABLE_CODES);

// 55P03 lock_not_available: the API pool's lock_timeout ran out while this request waited for a
// row another request holds (an order another write of the client is changing). The wait at a
// stream's counter is answered 429 by the append itself (events/append.ts).
const LOCK_WAIT_CODES = new Set(['55P03']);

/**
 * SQLSTATE class 22 ("data exception"): PostgreSQL refused a value the request carried (a NUL
 * byte, an out-of-range date, a number too large). The input schemas refuse these first; any
 * that slips past is still the caller's bad value, answered 400, never a 500.
 */
const DATA_EXCEPTION_ISSUES: Record<string, string> = {
  '22001': 'too_long',
  '22003': 'out_of_range',
  '22007': 'invalid_format',
  '22008': 'out_of_range',
  '22015': 'out_of_range',
  '22021': 'invalid_characters',
  '22P02': 'invalid_format',
  '22P05': 'invalid_characters',
};

function dataExceptionIssue(error: unknown): string | null {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code)) return DATA_EXCEPTION_ISSUES[code] ?? 'invalid_value';
  }
  return null;
}

/** tRPC wraps errors thrown in middleware; our PartnerError may sit a few causes deep. */
function findPartnerError(error: unknown): PartnerError | null {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof PartnerError) return e;
  }
  return null;
}

function isZodError(e: unknown): e is { name: 'ZodError'; issues: Parameters<typeof detailsFromZodIssues>[0] } {
  return e instanceof Error && e.name === 'ZodError' && Array.isArray((e as { issues?: unknown }).issues);
}

/**
 * The one mapping from any thrown value to the error envelope (DESIGN §3).
 * `pathParams` names the route's path parameters: a malformed id there is a 404, not a 400.
 */
export function errorBodyFor(error: unknown, requestId: string, pathParams: readonly string[]): ErrorResponse {
  const make = (code: ErrorCode, message: string, details?: ErrorDetail[], headers: Record<string, string> = {}): ErrorResponse => ({
    status: ERROR_CODES[code].status,
    headers,
    body: { error: { code, message, ...(details && details.length > 0 ? { details } : {}) }, request_id: requestId },
    unexpected: code === 'internal_error',
  });

  const partnerError = findPartnerError(error);
  if (partnerError) return make(partnerError.errorCode, partnerError.message, partnerError.details, partnerError.headers);
  if (hasCode(error, LOCK_WAIT_CODES)) return make('unavailable', 'The service is busy with other requests of this API client; retry shortly.', undefined, { 'Retry-After': '1' });
  if (isDatabaseUnavailable(error)) return make('unavailable', 'The service is temporarily unavailable; retry shortly.', undefined, { 'Retry-After': '5' });
  const dataIssue = dataExceptionIssue(error);
  if (dataIssue) {
    const message = 'A value in the request cannot be stored or compared as sent.';
    return { ...make('invalid_request', 'The request is not valid; see details.', [{ issue: dataIssue, message }]), warning: 'the database refused a value the input schemas let through' };
  }
  if (error instanceof TRPCError) {
    const cause = error.cause;
    if (error.code === 'BAD_REQUEST' && isZodError(cause)) {
      const pathIssue = cause.issues.find((issue) => pathParams.includes(String(issue.path[0])) && issue.code === 'invalid_format');
      if (pathIssue) return make('not_found', `No resource with that ${String(pathIssue.path[0])} is available to this API key.`);
      return make('invalid_request', 'The request is not valid; see details.', detailsFromZodIssues(cause.issues));
    }
    switch (error.code) {
      case 'PARSE_ERROR':
        return make('invalid_request', 'The request body is not valid JSON.', [{ issue: 'malformed_json' }]);
      // tRPC's own refusals of a malformed call (unreadable input, a batch where none is allowed).
      case 'BAD_REQUEST':
        return make('invalid_request', 'The request is malformed; send the input as JSON.', [{ issue: 'malformed_request' }]);
      case 'PAYLOAD_TOO_LARGE':
        return make('payload_too_large', 'The request body is too large.');
      case 'UNSUPPORTED_MEDIA_TYPE':
        return make('unsupported_media_type', 'Send the request body as JSON with "Content-Type: application/json".');
      case 'NOT_FOUND':
        return make('not_found', 'No such route.');
      case 'METHOD_NOT_SUPPORTED':
        return make('not_found', 'No such route.');
      default:
        if (isDatabaseUnavailable(cause)) return make('unavailable', 'The service is temporarily unavailable; retry shortly.', undefined, { 'Retry-After': '5' });
    }
  }
  return make('internal_error', 'An unexpected error occurred; quote the request_id when reporting it.');
}
