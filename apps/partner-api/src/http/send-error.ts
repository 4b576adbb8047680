import type { ServerResponse } from 'node:http';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { errorBodyFor, type ErrorResponse } from '@lop/domain';
import { requestIdOf } from './request-id';

/** The envelope's media type as express's `res.json` writes it: every failure but a procedure's. */
const ENVELOPE_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * A procedure's failure keeps the media type trpc-to-openapi gave it when it wrote the envelope,
 * on both partner doors (partner-rest.ts, partner-dispatcher.ts answer alike).
 */
export const PROCEDURE_FAILURE_CONTENT_TYPE = 'application/json';

/**
 * The one writer of the error envelope: status, the failure's own headers (Retry-After,
 * WWW-Authenticate), its media type and length, and the JSON body (none on a HEAD, as Node sends it).
 */
export function writeErrorEnvelope(res: ServerResponse, response: ErrorResponse, contentType = ENVELOPE_CONTENT_TYPE): void {
  const body = JSON.stringify(response.body);
  res.statusCode = response.status;
  res.setHeader('Content-Type', contentType);
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  res.setHeader('Content-Length', Buffer.byteLength(body));
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
