import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { acceptsRequestBody, createOpenApiNodeHttpHandler, forEachOpenApiProcedure, getPathRegExp, normalizePath } from 'trpc-to-openapi';
import { errorBodyFor, PartnerError, partnerRouter, type ErrorResponse, type ProcedureMeta, type RequestContext } from '@lop/domain';
import { logIfUnexpected, sendError } from './send-error';
import { requestIdOf } from './request-id';
import { invalidEncoding, undecodable } from './url-encoding';

const kError = Symbol('partnerError');
type WithError = IncomingMessage & { [kError]?: ErrorResponse };

/** Path parameter names per procedure, so a malformed id in the path answers 404. */
function pathParamsByProcedure(): Map<string, string[]> {
  const map = new Map<string, string[]>();
  forEachOpenApiProcedure(partnerRouter._def.procedures, ({ path, meta }) => {
    const route = (meta as ProcedureMeta).openapi!.path;
    map.set(path, [...route.matchAll(/\{(.+?)\}/g)].map((m) => m[1]));
  });
  return map;
}

/** Routes that read a JSON body. trpc-to-openapi ignores their query string, so a stray parameter would pass unnoticed. */
function bodyRoutes(): { method: string; pattern: RegExp }[] {
  const routes: { method: string; pattern: RegExp }[] = [];
  forEachOpenApiProcedure(partnerRouter._def.procedures, ({ meta }) => {
    const { method, path } = (meta as ProcedureMeta).openapi!;
    if (acceptsRequestBody(method)) routes.push({ method, pattern: getPathRegExp(normalizePath(path)) });
  });
  return routes;
}

/**
 * trpc-to-openapi hands path parameters to the procedure still percent-encoded (`a%20b`); a partner
 * encodes an identifier like any URL segment, so the procedure must see it decoded, once.
 * Text that is not valid percent-encoding is passed on as sent; escapes that are not UTF-8 are refused.
 */
function decodingCaller(caller: any, pathParams: Map<string, string[]>, path: string[] = []): any {
  return new Proxy(() => undefined, {
    get: (_target, key) => decodingCaller(caller, pathParams, [...path, String(key)]),
    apply: (_target, _this, [input]) => {
      const procedure = path.reduce((node, segment) => node[segment], caller);
      const decoded = input && typeof input === 'object' ? { ...input } : input;
      for (const name of pathParams.get(path.join('.')) ?? []) {
        if (typeof decoded?.[name] !== 'string') continue;
        if (undecodable(decoded[name])) throw invalidEncoding([name]);
        try {
          decoded[name] = decodeURIComponent(decoded[name]);
        } catch {
          // Left as sent; the procedure's schema judges it.
        }
      }
      return procedure(decoded);
    },
  });
}

/**
 * The REST facade: trpc-to-openapi routes each request to its procedure; we own the envelope.
 * The library writes its own error body, so the final write is swapped for our envelope.
 */
export function partnerRest(createContext: (req: Request, res: Response) => RequestContext, logger: Logger) {
  const pathParams = pathParamsByProcedure();
  const withBody = bodyRoutes();
  const handler = createOpenApiNodeHttpHandler({
    router: { ...partnerRouter, createCaller: (ctx: RequestContext) => decodingCaller(partnerRouter.createCaller(ctx), pathParams) },
    createContext: ({ req, res }: { req: IncomingMessage; res: ServerResponse }) => createContext(req as Request, res as Response),
    responseMeta: ({ ctx, errors }) => (errors.length === 0 && ctx ? { status: ctx.response.status ?? 200, headers: ctx.response.headers } : {}),
    onError: ({ error, path, req }) => {
      const res = (req as Request).res!;
      const response = errorBodyFor(error, requestIdOf(res), pathParams.get(path ?? '') ?? []);
      (req as WithError)[kError] = response;
      logIfUnexpected(logger, res, response, error);
    },
    maxBodySize: 100 * 1024,
  } as Parameters<typeof createOpenApiNodeHttpHandler>[0]);

  return (req: Request, res: Response, next: NextFunction) => {
    const url = new URL(req.url, 'http://localhost');
    const query = [...new Set(url.searchParams.keys())];
    if (query.length > 0 && withBody.some((route) => route.method === req.method && route.pattern.test(normalizePath(url.pathname)))) {
      const details = query.map((field) => ({ field, issue: 'unknown_field', message: 'This endpoint takes no query parameters; send fields in the JSON body.' }));
      return sendError(res, new PartnerError('invalid_request', 'The request is not valid; see details.', { details }), logger);
    }
    // trpc-to-openapi drops a parameter sent empty (`?cursor=`), which would silently mean "absent":
    // an empty cursor would restart the event stream from its first event instead of failing.
    const empty = query.filter((field) => url.searchParams.getAll(field).some((value) => value === ''));
    if (empty.length > 0) {
      const details = empty.map((field) => ({ field, issue: 'empty_value', message: 'Send a value or leave the parameter out.' }));
      return sendError(res, new PartnerError('invalid_request', 'The request is not valid; see details.', { details }), logger);
    }
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    (res as unknown as { end: (...args: unknown[]) => Response }).end = (chunk?: unknown, ...rest: unknown[]) => {
      const failure = (req as WithError)[kError];
      if (failure && !res.headersSent) {
        res.statusCode = failure.status;
        for (const [name, value] of Object.entries(failure.headers)) res.setHeader(name, value);
        return end(JSON.stringify(failure.body), ...rest.filter((a) => typeof a === 'function'));
      }
      return end(chunk, ...rest);
    };
    void handler(req, res, next);
  };
}
