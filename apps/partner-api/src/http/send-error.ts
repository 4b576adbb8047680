import type { ServerResponse } from 'node:http';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { errorBodyFor, type ErrorResponse } from '@lop/domain';
import { requestIdOf } from './request-id';

/**
 * Where a failure is answered from: a procedure (either partner door), or the transport around
 * it (authentication of the request, body parsing, unknown routes). Each keeps the header order it
 * always had: a procedure's failure states its media type first and leaves the length to Node, as
 * trpc-to-openapi wrote it; a transport failure states both after its own headers, as express's res.json did.
 */
export type FailureOrigin = 'procedure' | 'transport';

/**
 * The one writer of the error envelope: status, the failure's own headers (Retry-After,
 * WWW-Authenticate), its media type, and the JSON body (none on a HEAD, as Node sends it).
 */
export function writeErrorEnvelope(res: ServerResponse, response: ErrorResponse, origin: FailureOrigin = 'transport'): void {
  const body = JSON.stringify(response.body);
  res.statusCode = response.status;
  if (origin === 'procedure') res.setHeader('Content-Type', 'application/json');
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  if (origin === 'transport') {
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(body));
  }
  res.end(body);
}

/** Answers `error` with the envelope; 500s are logged with the request id (never their detail to the client). */
export function sendError(res: Response, error: unknown, logger: Logger, pathParams: readonly string[] = []): void {
  const response = errorBodyFor(error, requestIdOf(res), pathParams);
  logIfUnexpected(logger, res, response, error);
  writeErrorEnvelope(res, response);
}

export function logIfUnexpected(logger: Logger, res: Response, response: ErrorResponse, error: unknown): void {
  if (response.unexpected) logger.error({ err: error, request_id: requestIdOf(res) }, 'unexpected error');
  else if (response.status === 503) logger.warn({ err: error, request_id: requestIdOf(res) }, 'database unavailable');
  else if (response.warning) logger.warn({ err: error, request_id: requestIdOf(res) }, response.warning);
}
