import express, { type NextFunction, type Request, type Response } from 'express';
import { PartnerError } from '@lop/domain';

export const MAX_BODY_BYTES = 100 * 1024;

/**
 * JSON object bodies only, at most 100 KB (after decompression) and 32 levels deep; an empty body
 * counts as `{}` so body-less POST/PUT calls work. Self-contained: every refusal reaches `next` as
 * a PartnerError, so whichever door mounts it answers with the partner's code and details.
 */
export function jsonBody() {
  // Not strict: a body of `null` or `"x"` is valid JSON, refused below as not an object rather
  // than by the parser as "not valid JSON".
  const parse = express.json({ limit: MAX_BODY_BYTES, strict: false, type: 'application/json' });
  return (req: Request, res: Response, nextWithRaw: NextFunction) => {
    const next = (error?: unknown) => {
      if (error === undefined) return nextWithRaw();
      // The client went away before its body arrived: there is no one to answer, and it is no
      // failure of ours (the access log records it as 499).
      if ((error as { type?: string }).type === 'request.aborted') return;
      nextWithRaw(bodyParserError(error, req) ?? error);
    };
    // A declared length over the limit is refused at once, before the body has arrived.
    if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) {
      discardBody(req, res);
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
      // (undefined: the parser read nothing, e.g. a GET or another media type, refused elsewhere.)
      const body: unknown = req.body;
      if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
        return next(Object.assign(new Error('JSON body is not an object'), { type: 'entity.not.object' }));
      }
      next();
    });
  };
}

/**
 * How much of a refused body is still read, and dropped, after the answer. A connection closed
 * while the client is still sending is reset, and the client's next write fails (EPIPE) before it
 * has read the answer; reading on, as nginx's lingering close does, lets it read the 413. The
 * bounds (nginx's lingering_time for the time) keep a client that never stops from holding the
 * connection; past them it is closed after all.
 */
export const DISCARD_LIMIT_BYTES = 16 * 1024 * 1024;
export const DISCARD_LIMIT_MS = 30_000;

function discardBody(req: Request, res: Response): void {
  let bytes = 0;
  let closing = false;
  const close = () => {
    if (closing) return;
    closing = true;
    // Only once the answer is out: a socket destroyed with the answer still queued drops it.
    if (res.writableFinished) req.socket.destroy();
    else res.once('finish', () => req.socket.destroy());
  };
  const timer = setTimeout(close, DISCARD_LIMIT_MS).unref();
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > DISCARD_LIMIT_BYTES) close();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
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

/**
 * The partner's answer to a body the parser refused (malformed JSON, too large, too deep, not an
 * object, an unsupported charset or encoding, or a body not valid for its Content-Encoding), or
 * null for anything else.
 */
export function bodyParserError(error: unknown, req?: Pick<Request, 'headers'>): PartnerError | null {
  if (error instanceof PartnerError) return error;
  const { type, status } = error as { type?: string; status?: number };
  switch (type) {
    case 'entity.parse.failed':
      return new PartnerError('invalid_request', 'The request body is not valid JSON.', { details: [{ issue: 'malformed_json' }] });
    case 'entity.not.object':
      return new PartnerError('invalid_request', 'The request body must be a JSON object.', { details: [{ issue: 'not_an_object' }] });
    case 'entity.too.deep':
      return new PartnerError('invalid_request', 'The request body nests JSON too deeply.', { details: [{ issue: 'too_deeply_nested' }] });
    case 'entity.too.large':
      return new PartnerError('payload_too_large', 'The request body is too large (100 KB at most).');
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return new PartnerError('unsupported_media_type', 'Send the request body as UTF-8 JSON.');
  }
  // The decompressor's own failure (gzip, deflate or br that is not valid for it) reaches here as an
  // untyped 400; body-parser reads nothing else from a decompression stream.
  const encoding = String(req?.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (type === undefined && status === 400 && encoding !== 'identity') {
    return new PartnerError('invalid_request', 'The request body is not valid for its Content-Encoding.', {
      details: [{ field: 'Content-Encoding', issue: 'invalid_encoding', message: `The body could not be decoded as ${encoding}.` }],
    });
  }
  return null;
}
