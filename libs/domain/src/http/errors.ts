import { ERROR_CODES as PUBLISHED_ERROR_CODES, type ErrorCode } from '@lop/contract';
import { TRPCError } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';

/** The tRPC code each published error travels as on the tRPC door (REST answers its HTTP status). */
const TRPC_CODES = {
  invalid_request: 'BAD_REQUEST',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  report_not_modeled: 'NOT_FOUND',
  method_not_allowed: 'METHOD_NOT_SUPPORTED',
  // tRPC has no 406 code; its door answers JSON whatever was asked, so this only travels on REST.
  not_acceptable: 'BAD_REQUEST',
  conflict: 'CONFLICT',
  payload_too_large: 'PAYLOAD_TOO_LARGE',
  unsupported_media_type: 'UNSUPPORTED_MEDIA_TYPE',
  not_orderable: 'UNPROCESSABLE_CONTENT',
  simulation_not_allowed: 'UNPROCESSABLE_CONTENT',
  rate_limited: 'TOO_MANY_REQUESTS',
  internal_error: 'INTERNAL_SERVER_ERROR',
  unavailable: 'SERVICE_UNAVAILABLE',
} as const satisfies Record<ErrorCode, TRPC_ERROR_CODE_KEY>;

/**
 * Every failure a partner can see: its code, HTTP status and meaning as published
 * (@lop/contract), with the tRPC code it travels as. One table, so the REST layer, the tRPC
 * layer and the OpenAPI document can never disagree.
 */
export const ERROR_CODES = Object.fromEntries(
  Object.entries(PUBLISHED_ERROR_CODES).map(([code, published]) => [code, { ...published, trpc: TRPC_CODES[code as ErrorCode] }]),
) as { readonly [C in ErrorCode]: (typeof PUBLISHED_ERROR_CODES)[C] & { readonly trpc: (typeof TRPC_CODES)[C] } };

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
