import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { createOpenApiNodeHttpHandler, forEachOpenApiProcedure } from 'trpc-to-openapi';
import { errorBodyFor, partnerRouter, type ErrorResponse, type ProcedureMeta, type RequestContext } from '@lop/domain';
import { logIfUnexpected } from './send-error';
import { requestIdOf } from './request-id';

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

/**
 * The REST facade: trpc-to-openapi routes each request to its procedure; we own the envelope.
 * The library writes its own error body, so the final write is swapped for our envelope.
 */
export function partnerRest(createContext: (req: Request, res: Response) => RequestContext, logger: Logger) {
  const pathParams = pathParamsByProcedure();
  const handler = createOpenApiNodeHttpHandler({
    router: partnerRouter,
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
