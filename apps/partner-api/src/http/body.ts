import express, { type NextFunction, type Request, type Response } from 'express';

export const MAX_BODY_BYTES = 100 * 1024;

/** JSON bodies only, at most 100 KB; an empty body counts as `{}` so body-less POST/PUT calls work. */
export function jsonBody() {
  const parse = express.json({ limit: MAX_BODY_BYTES, strict: true, type: 'application/json' });
  return (req: Request, res: Response, next: NextFunction) => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (!hasBody && req.method !== 'GET' && req.method !== 'HEAD') {
      req.headers['content-type'] = 'application/json';
      req.body = {};
      return next();
    }
    parse(req, res, next);
  };
}
