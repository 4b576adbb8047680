import express, { type NextFunction, type Request, type Response } from 'express';

export const MAX_BODY_BYTES = 100 * 1024;

/** JSON object bodies only, at most 100 KB and 32 levels deep; an empty body counts as `{}` so body-less POST/PUT calls work. */
export function jsonBody() {
  const parse = express.json({ limit: MAX_BODY_BYTES, strict: true, type: 'application/json' });
  return (req: Request, res: Response, next: NextFunction) => {
    // A declared length over the limit is refused at once; the connection closes rather than
    // reading (and discarding) whatever the client still means to send.
    if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) {
      res.setHeader('Connection', 'close');
      return next(Object.assign(new Error('request entity too large'), { type: 'entity.too.large' }));
    }
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (!hasBody && req.method !== 'GET' && req.method !== 'HEAD') {
      req.headers['content-type'] = 'application/json';
      req.body = {};
      return next();
    }
    parse(req, res, (error?: unknown) => {
      if (error) return next(error);
      // Deeply nested JSON parses fine but overflows the stack of whatever walks it later (a 500).
      if (nestingExceeds(req.body, MAX_JSON_DEPTH)) return next(Object.assign(new Error('JSON nested too deeply'), { type: 'entity.too.deep' }));
      // Every partner body is an object; an array would otherwise be spread into the input as `{}`.
      if (Array.isArray(req.body)) return next(Object.assign(new Error('JSON body is not an object'), { type: 'entity.not.object' }));
      next();
    });
  };
}

/** No partner body nests deeper than a few levels; 32 leaves ample room. */
export const MAX_JSON_DEPTH = 32;

/** Iterative, so the check itself cannot overflow. */
export function nestingExceeds(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth >= maxDepth) return true;
    for (const child of Object.values(current)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}
