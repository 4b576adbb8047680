import { TRPCError } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';

/**
 * Every failure a partner can see, with its HTTP status. One table, so the REST layer,
 * the tRPC layer and the OpenAPI document can never disagree.
 */
export const ERROR_CODES = {
  invalid_request: { status: 400, trpc: 'BAD_REQUEST', description: 'The request is malformed: bad JSON, a missing, unknown, too long or ill-typed field, or a bad query parameter.' },
  unauthorized: { status: 401, trpc: 'UNAUTHORIZED', description: 'The API key is missing, malformed, unknown, revoked or expired.' },
  forbidden: { status: 403, trpc: 'FORBIDDEN', description: 'The API key is valid but lacks the scope this endpoint needs.' },
  not_found: { status: 404, trpc: 'NOT_FOUND', description: 'No such route, or no such resource for this key (unknown, ungranted, another tenant or environment, malformed id, unreleased result).' },
  report_not_modeled: { status: 404, trpc: 'NOT_FOUND', description: 'The result is released but the laboratory supplied no canonical report document; no report is fabricated.' },
  conflict: { status: 409, trpc: 'CONFLICT', description: 'The request conflicts with current state; details[0].issue names which conflict.' },
  payload_too_large: { status: 413, trpc: 'PAYLOAD_TOO_LARGE', description: 'The request body is larger than the service accepts.' },
  unsupported_media_type: { status: 415, trpc: 'UNSUPPORTED_MEDIA_TYPE', description: 'Request bodies must be JSON (Content-Type: application/json).' },
  not_orderable: { status: 422, trpc: 'UNPROCESSABLE_CONTENT', description: 'The program, test or subject is not orderable; details list what is missing.' },
  simulation_not_allowed: { status: 422, trpc: 'UNPROCESSABLE_CONTENT', description: 'Simulation needs a sandbox key, a synthetic order, and an order in the state the next step of the scenario needs; details[0].issue says which.' },
  rate_limited: { status: 429, trpc: 'TOO_MANY_REQUESTS', description: 'Too many requests; retry after the number of seconds in Retry-After.' },
  internal_error: { status: 500, trpc: 'INTERNAL_SERVER_ERROR', description: 'An unexpected error; it is logged with the request_id.' },
  unavailable: { status: 503, trpc: 'SERVICE_UNAVAILABLE', description: 'The service cannot reach its database; retry after the number of seconds in Retry-After.' },
} as const satisfies Record<string, { status: number; trpc: TRPC_ERROR_CODE_KEY; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetail {
  field?: string;
  issue: string;
  message?: string;
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: ErrorDetail[] };
  request_id: string;
}

/** A failure meant for the partner: its code, sentence and details are safe to return as they are. */
export class PartnerError extends TRPCError {
  readonly errorCode: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetail[];
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: { details?: ErrorDetail[]; headers?: Record<string, string>; cause?: unknown } = {}) {
    super({ code: ERROR_CODES[code].trpc, message, cause: options.cause });
    this.name = 'PartnerError';
    this.errorCode = code;
    this.status = ERROR_CODES[code].status;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

export const notFound = (what = 'resource') => new PartnerError('not_found', `No ${what} with that identifier is available to this API key.`);
export const conflict = (issue: string, message: string) => new PartnerError('conflict', message, { details: [{ issue }] });
