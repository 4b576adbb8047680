import type { Response } from 'express';
import type { Logger } from 'pino';
import { errorBodyFor, type ErrorResponse } from '@lop/domain';
import { requestIdOf } from './request-id';

/** Writes an error envelope; 500s are logged with the request id (never their detail to the client). */
export function sendError(res: Response, error: unknown, logger: Logger, pathParams: readonly string[] = []): void {
  const response = errorBodyFor(error, requestIdOf(res), pathParams);
  logIfUnexpected(logger, res, response, error);
  res.status(response.status).set(response.headers).json(response.body);
}

export function logIfUnexpected(logger: Logger, res: Response, response: ErrorResponse, error: unknown): void {
  if (response.unexpected) logger.error({ err: error, request_id: requestIdOf(res) }, 'unexpected error');
  else if (response.status === 503) logger.warn({ err: error, request_id: requestIdOf(res) }, 'database unavailable');
  else if (response.warning) logger.warn({ err: error, request_id: requestIdOf(res) }, response.warning);
}
