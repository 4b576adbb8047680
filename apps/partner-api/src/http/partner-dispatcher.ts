import { TRPCError } from '@trpc/server';
import type { Express, NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { getBody, getErrorFromUnknown, getQuery, normalizePath } from 'trpc-to-openapi';
import { errorBodyFor, responseJson, type RequestContext } from '@lop/domain';
import { decodePathParams, inputShapeOf, partnerRoutes, queryRefusal, routingMethod, type PartnerRoute } from './partner-routes';
import { requestIdOf } from './request-id';
import { logIfUnexpected, writeErrorEnvelope } from './send-error';

type Handler = (req: Request, res: Response, next: NextFunction) => unknown;
type ErrorHandler = (error: unknown, req: Request, res: Response, next: NextFunction) => unknown;

export interface PartnerDispatcherOptions {
  /** Where the partner REST facade is mounted. */
  basePath: string;
  /** The app-level middlewares every request passes first (request id, metrics, access log). */
  everyRequest: Handler[];
  /** The middlewares mounted at `basePath` before the REST facade (query encoding, JSON body). */
  partnerMiddlewares: Handler[];
  createContext: (req: Request, res: Response) => RequestContext;
  /** The app's error middleware, for what the middlewares refuse. */
  answerError: ErrorHandler;
  logger: Logger;
}

/**
 * Path and query made only of characters a URL parser leaves as they are, with no dot segments
 * and no fragment: for these the raw request target means exactly what the WHATWG URL parser
 * (trpc-to-openapi's view) and parseurl (express's) make of it. Anything else takes the express
 * route, where the libraries themselves read it.
 */
const PLAIN_TARGET = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*(\?[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*)?$/;
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:\/|\?|$)/i;

/**
 * The partner REST facade's hot path: a route table built once from the router's OpenAPI meta
 * (partner-routes.ts), in front of express for the partner base path. A partner call runs the
 * same middlewares express would run for it, in the same order, then goes straight to its
 * procedure through tRPC's procedure call (what tRPC's own caller does), with the input assembled
 * the way trpc-to-openapi assembles it (its own getQuery/getBody, coercion and path parameters) and
 * the same envelope, status and headers. Input and output validation are the procedure's, as on
 * every door.
 *
 * What it skips is per-request machinery that answered nothing: express walking every router
 * layer (probes, documents, nested routers) before the partner mount, trpc-to-openapi building a
 * URL, a fetch Request (for an abort signal nobody reads) and a caller proxy per call, and our
 * decoding proxy around that. About half of a small GET's CPU went there.
 *
 * Requests it does not take (another path, a method the path's routes do not answer, an unusual
 * spelling) go through express and trpc-to-openapi as before (partner-rest.ts); a test compares both routes.
 */
export function withPartnerDispatcher(app: Express, options: PartnerDispatcherOptions): Express {
  const match = partnerCallMatcher(options.basePath);
  const middlewares = [...options.everyRequest, ...options.partnerMiddlewares];

  const appHandle = (app as unknown as { handle: (req: Request, res: Response, callback?: NextFunction) => void }).handle.bind(app);
  (app as unknown as { handle: typeof appHandle }).handle = (req, res, callback) => {
    const found = match(req.method ?? '', req.url ?? '');
    if (!found) return appHandle(req, res, callback);
    // What express's app.handle sets up before its router (x-powered-by is off). Express's own
    // request and response (their prototypes) are put on only when something reads them: the
    // query parser, express-rate-limit, the error answer. Swapping an object's prototype is
    // costly in V8, and a plain read never needs it.
    if (app.enabled('x-powered-by')) res.setHeader('X-Powered-By', 'Express');
    req.res = res;
    res.req = req;
    let isExpress = false;
    const asExpress = () => {
      if (isExpress) return;
      isExpress = true;
      Object.setPrototypeOf(req, app.request);
      Object.setPrototypeOf(res, app.response);
    };
    if (!res.locals) res.locals = Object.create(null);
    req.originalUrl = req.url;
    const answerError = (error: unknown) => {
      asExpress();
      const result = options.answerError(error, req, res, () => undefined);
      if (result instanceof Promise) result.catch(() => undefined);
    };
    runMiddlewares(middlewares, req, res, answerError, () => {
      // Express's mount at the base path: the facade sees the path below it.
      req.baseUrl = options.basePath;
      req.url = req.originalUrl.slice(options.basePath.length);
      const end = req.url.indexOf('?');
      const search = end === -1 ? '' : req.url.slice(end);
      const refusal = queryRefusal(search, found.route.acceptsBody);
      if (refusal) return answerError(refusal);
      void dispatch({ ...found, search, req, res, asExpress }, options);
    });
  };
  return app;
}

/**
 * The partner route a request target names, as trpc-to-openapi would find it (the same patterns, in
 * the same order), or null when the request is not the dispatcher's to take.
 */
export function partnerCallMatcher(basePath: string): (method: string, url: string) => { route: PartnerRoute; params: Record<string, string> } | null {
  const byMethod = new Map<string, PartnerRoute[]>();
  for (const route of partnerRoutes()) byMethod.set(route.method, [...(byMethod.get(route.method) ?? []), route]);
  const prefix = `${basePath}/`;
  return (method, url) => {
    if (!url.startsWith(prefix) || !PLAIN_TARGET.test(url) || DOT_SEGMENT.test(url)) return null;
    const routes = byMethod.get(routingMethod(method));
    if (!routes) return null;
    const end = url.indexOf('?');
    const path = normalizePath((end === -1 ? url : url.slice(0, end)).slice(basePath.length));
    for (const route of routes) {
      const found = route.pattern.exec(path);
      if (found) return { route, params: { ...found.groups } };
    }
    return null;
  };
}

interface Call {
  route: PartnerRoute;
  params: Record<string, string>;
  /** The query string, `?` included; empty when there is none. */
  search: string;
  req: Request;
  res: Response;
  asExpress: () => void;
}

/** trpc-to-openapi's handler for one matched route (adapters/node-http/core), with our envelope for failures. */
async function dispatch({ route, params, search, req, res, asExpress }: Call, options: PartnerDispatcherOptions): Promise<void> {
  try {
    const contentType = req.headers['content-type'];
    if (route.acceptsBody && !contentType?.startsWith('application/json')) {
      throw new TRPCError({ code: 'UNSUPPORTED_MEDIA_TYPE', message: contentType ? `Unsupported content-type "${contentType}` : 'Missing content-type header' });
    }
    const shape = inputShapeOf(route.procedure);
    let input: Record<string, unknown> | undefined;
    if (!shape.likeVoid) {
      let given: Record<string, unknown>;
      if (route.acceptsBody) given = await getBody(req as never);
      else if (search === '') given = {};
      else {
        // Under express, trpc-to-openapi's getQuery reads req.query: express's query parser.
        asExpress();
        given = getQuery(req as never, new URL('http://127.0.0.1'));
      }
      const assembled: Record<string, unknown> = { ...given, ...params };
      if (shape.coercible && !route.acceptsBody) {
        for (const key of shape.arrayKeys) if (assembled[key] !== undefined && !Array.isArray(assembled[key])) assembled[key] = [assembled[key]];
      }
      input = assembled;
    }
    const ctx = options.createContext(req, res);
    // express-rate-limit reads express's request and response.
    const spend = ctx.spendRateLimit;
    ctx.spendRateLimit = (policy, subject) => {
      asExpress();
      return spend(policy, subject);
    };
    const rawInput = decodePathParams(input, route.pathParams);
    const data = await route.procedure({ path: route.procedurePath, getRawInput: async () => rawInput, ctx, type: route.type, signal: undefined, batchIndex: 0 } as never);
    res.statusCode = ctx.response.status ?? 200;
    res.setHeader('Content-Type', 'application/json');
    for (const [name, value] of Object.entries(ctx.response.headers)) if (value !== undefined) res.setHeader(name, value);
    // A pre-rendered page (the events' stored bytes) is sent as it is (libs/domain/src/http/prerendered.ts).
    res.end(responseJson(data, ctx.response.indent));
  } catch (cause) {
    const error = getErrorFromUnknown(cause);
    const response = errorBodyFor(error, requestIdOf(res), route.pathParams);
    logIfUnexpected(options.logger, res, response, error);
    if (res.headersSent) return;
    writeErrorEnvelope(res, response);
  }
}

/**
 * Express's layer semantics for a flat list: `next()` runs the following middleware, `next(error)`
 * (or a throw, or a rejected promise) goes to the error middleware; after the last, `done`.
 */
function runMiddlewares(stack: Handler[], req: Request, res: Response, answerError: (error: unknown) => void, done: () => void): void {
  let index = 0;
  let failed = false;
  const fail = (error: unknown) => {
    if (failed) return;
    failed = true;
    answerError(error);
  };
  const next: NextFunction = (error?: unknown) => {
    if (failed) return;
    if (error && error !== 'route' && error !== 'router') return fail(error);
    const handler = stack[index++];
    if (!handler) return done();
    try {
      const result = handler(req, res, next);
      if (result instanceof Promise) result.then(undefined, fail);
    } catch (thrown) {
      fail(thrown);
    }
  };
  next();
}
