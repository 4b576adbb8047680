import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { createOpenApiNodeHttpHandler, normalizePath } from 'trpc-to-openapi';
import { errorBodyFor, partnerRouter, type ErrorResponse, type RequestContext } from '@lop/domain';
import { decodePathParams, methodNotAllowed, methodsAnswering, partnerRoutes, queryRefusal, routingMethod } from './partner-routes';
import { logIfUnexpected, sendError, writeErrorEnvelope } from './send-error';
import { requestIdOf } from './request-id';

/** Wraps tRPC's caller so each procedure gets its path parameters decoded (decodePathParams). */
function decodingCaller(caller: any, pathParams: Map<string, string[]>, path: string[] = []): any {
  return new Proxy(() => undefined, {
    get: (_target, key) => decodingCaller(caller, pathParams, [...path, String(key)]),
    apply: (_target, _this, [input]) => {
      const procedure = path.reduce((node, segment) => node[segment], caller);
      return procedure(decodePathParams(input, pathParams.get(path.join('.')) ?? []));
    },
  });
}

/**
 * The REST facade: trpc-to-openapi routes each request to its procedure; we own the envelope.
 * The library writes its own error body, so the final write is swapped for our envelope.
 */
export function partnerRest(createContext: (req: Request, res: Response) => RequestContext, logger: Logger) {
  const routes = partnerRoutes();
  const pathParams = new Map(routes.map((route) => [route.procedurePath, route.pathParams]));
  const handler = createOpenApiNodeHttpHandler({
    router: { ...partnerRouter, createCaller: (ctx: RequestContext) => decodingCaller(partnerRouter.createCaller(ctx), pathParams) },
    createContext: ({ req, res }: { req: IncomingMessage; res: ServerResponse }) => createContext(req as Request, res as Response),
    responseMeta: ({ ctx, errors }) => (errors.length === 0 && ctx ? { status: ctx.response.status ?? 200, headers: ctx.response.headers } : {}),
    onError: ({ error, path, req }) => {
      const res = (req as Request).res!;
      const response = errorBodyFor(error, requestIdOf(res), pathParams.get(path ?? '') ?? []);
      answerWithEnvelope(res, response);
      logIfUnexpected(logger, res, response, error);
    },
    maxBodySize: 100 * 1024,
  } as Parameters<typeof createOpenApiNodeHttpHandler>[0]);

  return (req: Request, res: Response, next: NextFunction) => {
    const url = new URL(req.url, 'http://localhost');
    const path = normalizePath(url.pathname);
    const method = routingMethod(req.method);
    const acceptsBody = routes.some((route) => route.acceptsBody && route.method === method && route.pattern.test(path));
    const refusal = queryRefusal(url.search, acceptsBody);
    if (refusal) return sendError(res, refusal, logger);
    if (method === req.method) return void handler(req, res, next);
    // A HEAD, run as its GET: trpc-to-openapi routes no HEAD, and reads the method once, as it
    // starts. Node sends no body in answer to a HEAD whatever is written.
    req.method = method;
    const running = handler(req, res, next);
    req.method = 'HEAD';
    void running;
  };
}

/**
 * A partner path whose routes do not answer the request's method: 405 with Allow, before its body
 * or its key is read. On express's route only: the dispatcher takes only calls a route answers.
 */
export function partnerMethods(logger: Logger) {
  const answering = methodsAnswering(partnerRoutes());
  return (req: Request, res: Response, next: NextFunction) => {
    const allowed = answering(normalizePath(new URL(req.url, 'http://localhost').pathname));
    if (allowed.length === 0 || allowed.includes(req.method)) return next();
    sendError(res, methodNotAllowed(req.method, allowed), logger);
  };
}

/**
 * The library writes its own error body next; its final write is swapped for our envelope. Swapped
 * from onError, so the swap is the outermost wrapper of `res.end`: whatever wrapped it before (the
 * request log's capture) sees the envelope the partner gets.
 */
function answerWithEnvelope(res: Response, failure: ErrorResponse): void {
  const end = res.end;
  (res as unknown as { end: (...args: unknown[]) => Response }).end = (...args: unknown[]) => {
    // Put back first: the envelope's write then goes through whatever wrapped `end` before.
    res.end = end;
    if (res.headersSent) return end.apply(res, args as never);
    writeErrorEnvelope(res, failure);
    return res;
  };
}
