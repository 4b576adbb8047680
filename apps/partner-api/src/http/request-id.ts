import { randomBytes } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

export const newRequestId = () => `req_${randomBytes(12).toString('hex')}`;

/** Every response carries our own request id; a client-sent X-Request-Id is not trusted as ours. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const id = newRequestId();
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
}

export const requestIdOf = (res: Response): string => res.locals.requestId as string;
