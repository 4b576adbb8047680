import { PARTNER_BASE_PATH } from '@lop/contract';
import type { Request, Response } from 'express';
import { normalizePath } from 'trpc-to-openapi';
import { CAPTURE_LIMIT_BYTES, sourceOf, type Caller, type ProcedureMeta, type RequestContext, type RequestLogWriter } from '@lop/domain';
import { MAX_BODY_BYTES } from './body';
import { partnerRoutes, type PartnerRoute } from './partner-routes';
import { requestIdOf } from './request-id';

/** Reading the log is not itself logged: `lop logs tail` polling would fill the log with itself. */
const NOT_LOGGED = new Set(['sandbox.requestLog']);
const TRPC_PREFIX = '/api/trpc/';
/**
 * The console's own polls (its live event stream, every second or two while it is open) carry
 * this header: they are no reader's action and would bury the log. Only the console door reads
 * it, and a client hiding its own requests from its own log hides nothing from anyone else.
 */
const CONSOLE_BACKGROUND = 'x-console-background';

/**
 * The transport's half of the sandbox request log (docs/request-log.md): which requests are logged,
 * and what is handed to the writer once their response has finished.
 *
 * Logged: calls of a partner REST route (a procedure with OpenAPI meta) whose key the core's guard
 * identified as a sandbox key, through either door: REST, and the console's tRPC calls of the same
 * procedures, which stand for those REST requests (the console's inspector shows them as such).
 * Not logged: production keys, requests refused before a key was identified (401, malformed
 * bodies), the console's own views (no REST route) and background polls, and reads of the log.
 *
 * Nothing is done for a request until the guard has identified a sandbox key (the context's
 * `identified` holder calls back): a production request pays for none of it. The response's bytes
 * are kept as they are written (a reference per chunk, up to CAPTURE_LIMIT_BYTES); parsing,
 * redaction and the INSERT happen later, in the writer's batch.
 */
export function requestLogCapture(writer: RequestLogWriter) {
  const routes = partnerRoutes().filter((route) => !NOT_LOGGED.has(route.procedurePath));
  const byProcedure = new Map(routes.map((route) => [route.procedurePath, route]));
  const routeOf = (req: Request, door: RequestContext['door']): PartnerRoute | undefined => {
    const path = req.originalUrl.split('?')[0];
    if (door === 'console') return path.startsWith(TRPC_PREFIX) && req.headers[CONSOLE_BACKGROUND] !== '1' ? byProcedure.get(path.slice(TRPC_PREFIX.length)) : undefined;
    const below = normalizePath(path.slice(PARTNER_BASE_PATH.length));
    return routes.find((route) => route.method === req.method && route.pattern.test(below));
  };

  const capture = (req: Request, res: Response, door: RequestContext['door'], answer: RequestContext['response'], caller: Caller) => {
    const route = routeOf(req, door);
    if (!route || !writer.admit(caller.clientId)) return;
    const receivedAt = (res.locals.receivedAt as number | undefined) ?? performance.now();
    const chunks: (string | Uint8Array)[] = [];
    let bytes = 0;
    // tRPC's adapter writes the web stream's Uint8Array chunks; the others write strings.
    const keep = (chunk: unknown) => {
      if (typeof chunk !== 'string' && !(chunk instanceof Uint8Array)) return;
      const size = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
      bytes += size;
      if (bytes <= CAPTURE_LIMIT_BYTES) chunks.push(chunk);
    };
    const write = res.write;
    const end = res.end;
    res.write = function (this: Response, chunk: unknown, ...rest: unknown[]) {
      keep(chunk);
      return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as Response['write'];
    res.end = function (this: Response, chunk?: unknown, ...rest: unknown[]) {
      if (typeof chunk !== 'function') keep(chunk);
      return (end as (...args: unknown[]) => Response).call(this, chunk, ...rest);
    } as Response['end'];
    res.once('finish', () => {
      writer.record({
        caller,
        requestId: requestIdOf(res),
        occurredAt: new Date(),
        method: route.method,
        route: route.template,
        scope: scopeOf(route),
        status: door === 'console' ? restStatusOf(route, res.statusCode, answer) : res.statusCode,
        durationMs: performance.now() - receivedAt,
        door,
        source: sourceOf(door, req.headers['user-agent']),
        requestBody: route.acceptsBody ? restBodyOf(req.body, door === 'console' ? route.pathParams : []) : undefined,
        // Never stored: read only for what an error sentence might repeat (request-log/allow-list.ts).
        url: req.originalUrl,
        sentInput: door === 'console' ? req.body : undefined,
        // A chunked body declares no length: counted at the body limit, so the writer's memory budget holds.
        requestBytes: route.acceptsBody ? Number(req.headers['content-length']) || MAX_BODY_BYTES : 0,
        responseText: bytes <= CAPTURE_LIMIT_BYTES ? Buffer.concat(chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : chunk))).toString('utf8') : '',
        responseBytes: bytes,
      });
    });
  };

  /**
   * The context's `identified` holder: when the guard names a sandbox caller, this request is
   * captured. `answer`: the context's response, where a procedure sets the status REST answers.
   */
  return (req: Request, res: Response, door: RequestContext['door'], answer: RequestContext['response']): RequestContext['identified'] => {
    let identified: Caller | undefined;
    return {
      get caller() {
        return identified;
      },
      set caller(caller: Caller | undefined) {
        const first = identified === undefined;
        identified = caller;
        if (first && caller?.environment === 'sandbox') capture(req, res, door, answer, caller);
      },
    };
  };
}

function scopeOf(route: PartnerRoute): string | null {
  const scope = (route.procedure._def.meta as ProcedureMeta | undefined)?.scope;
  return scope && scope !== 'none' ? scope : null;
}

/**
 * The status REST answers for a console call: tRPC answers every success 200, REST what the
 * procedure set (partner-dispatcher.ts: an order created is 201) or its meta states, as the
 * console's inspector shows it. A failure's status is already REST's (trpc.ts's error formatter).
 */
function restStatusOf(route: PartnerRoute, trpcStatus: number, answer: RequestContext['response']): number {
  if (trpcStatus >= 300) return trpcStatus;
  return answer.status ?? (route.procedure._def.meta as ProcedureMeta | undefined)?.successStatus ?? trpcStatus;
}

/** The body as REST carries it: the console's input also holds the path parameters, which REST sends in the path. */
function restBodyOf(body: unknown, pathParams: readonly string[]): unknown {
  if (!body || typeof body !== 'object' || pathParams.length === 0) return body;
  const copy = { ...(body as Record<string, unknown>) };
  for (const name of pathParams) delete copy[name];
  return copy;
}
