import { randomBytes } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

// Random bytes fetched 3 KB at a time: one call into the CSPRNG per request was 2% of a GET's CPU.
const ID_BYTES = 12;
let pool = Buffer.alloc(0);
let offset = 0;
export function newRequestId(): string {
  if (offset + ID_BYTES > pool.length) {
    pool = randomBytes(ID_BYTES * 256);
    offset = 0;
  }
  offset += ID_BYTES;
  return `req_${pool.toString('hex', offset - ID_BYTES, offset)}`;
}

/** Every response carries our own request id; a client-sent X-Request-Id is not trusted as ours. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const id = newRequestId();
  res.locals.requestId = id;
  // When the request arrived, for the sandbox request log's duration.
  res.locals.receivedAt = performance.now();
  res.setHeader('X-Request-Id', id);
  next();
}

export const requestIdOf = (res: Response): string => res.locals.requestId as string;
