import { OPENAPI_PATH, PARTNER_BASE_PATH } from '@lop/contract';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import * as trpcExpress from '@trpc/server/adapters/express';
import type { DatabaseConnection } from '@lop/db';
import {
  buildOpenApiDocument,
  errorBodyFor,
  PartnerError,
  partnerRouter,
  ReadAuditWriter,
  StreamWriteGate,
  type Config,
  type DataProtector,
  type EventWaiters,
  type RequestContext,
  type ReplicaSet,
  type RequestLogWriter,
} from '@lop/domain';
import { accessLog } from './http/access-log';
import { bodyParserError, jsonBody, MAX_BODY_BYTES } from './http/body';
import { healthProbes } from './http/health-probes';
import { withPartnerDispatcher } from './http/partner-dispatcher';
import { partnerMethods, partnerRest } from './http/partner-rest';
import { GUIDES_PATH, partnerGuides } from './http/guides';
import { openApiDocumentHandler, publicDocuments } from './http/public-documents';
import { rateLimitSpender } from './http/rate-limit';
import { CONSOLE_CONTENT_SECURITY_POLICY, GUIDES_CONTENT_SECURITY_POLICY, securityHeaders } from './http/security-headers';
import { requestId, requestIdOf } from './http/request-id';
import { requestLogCapture } from './http/request-log';
import { requestMetrics } from './http/request-metrics';
import { utf8Query } from './http/url-encoding';
import { logIfUnexpected, sendError } from './http/send-error';

export interface AppDependencies {
  database: DatabaseConnection;
  config: Pick<Config, 'PARTNER_SANDBOX_BASE_URL' | 'PARTNER_PRODUCTION_BASE_URL' | 'PARTNER_CREATE_ORDER_RATE_LIMIT' | 'PARTNER_WEBHOOK_OPERATION_RATE_LIMIT' | 'PARTNER_IDEMPOTENCY_WAIT_SECONDS' | 'PARTNER_CLIENT_WRITE_CONCURRENCY'>;
  logger: Logger;
  protector: DataProtector;
  /** Folder of the built sandbox console, served at /console when present. */
  consoleDir?: string;
  /** Where request durations are recorded (Prometheus); none when metrics are off. */
  metrics?: Registry;
  /** Webhook destination policy and attempt timeout, for the console's sandbox webhook self-service. */
  webhooks?: RequestContext['webhooks'];
  /** Where sandbox requests are logged (docs/request-log.md); none: nothing is logged. */
  requestLog?: RequestLogWriter;
  /** Read replicas (DATABASE_READ_URL) for the replica-safe reads; none: the primary answers everything. */
  replicas?: ReplicaSet;
  /** Where audited reads are recorded, on the primary (main.ts gives it a pool of its own); default: on `database`. */
  audit?: ReadAuditWriter;
  /** Reads of GET /v1/events waiting for their stream's next event (main.ts listens for them); none: `wait` answers at once. */
  eventWaiters?: EventWaiters;
}

/**
 * tRPC batching (`?batch=1`, procedures joined by commas) let one HTTP request run hundreds of
 * calls past every per-request bound; the console never batches, so the door takes one call per request.
 */
function refuseBatches(req: Request, _res: Response, next: NextFunction): void {
  if (req.query.batch !== undefined || req.path.includes(',')) {
    return next(new PartnerError('invalid_request', 'Send one procedure call per request: batched calls are not accepted.', { details: [{ field: 'batch', issue: 'batch_not_allowed' }] }));
  }
  next();
}

/** Aborted when the response's connection closes before the answer is written (the client left). */
function clientGone(res: Response): AbortSignal {
  const gone = new AbortController();
  // Asked while the request runs: a client that already left has no socket, or a destroyed one.
  if (!res.writableFinished && (!res.socket || res.socket.destroyed)) gone.abort();
  else
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
    });
  return gone.signal;
}

export function createApp({ database, config, logger, protector, consoleDir, metrics, webhooks, requestLog, replicas, audit: auditWriter, eventWaiters }: AppDependencies) {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Every request's own: its id, its duration metric and its access log line.
  const everyRequest = [requestId, ...(metrics ? [requestMetrics(metrics)] : []), accessLog(logger)];
  app.use(...everyRequest);

  const writeGate = new StreamWriteGate({ concurrency: config.PARTNER_CLIENT_WRITE_CONCURRENCY });
  const spenderFor = rateLimitSpender(database.sql, { create_order: config.PARTNER_CREATE_ORDER_RATE_LIMIT, webhook_operations: config.PARTNER_WEBHOOK_OPERATION_RATE_LIMIT });
  // Audit records of reads go to the primary, whichever pool answers the read.
  const audit = auditWriter ?? new ReadAuditWriter(database.sql);
  const identifiedHolder = requestLog ? requestLogCapture(requestLog) : undefined;
  // One context for both doors: the core's guard (libs/domain/src/guard.ts) applies every protection from it.
  const createContext = (req: Request, res: Response, door: RequestContext['door']): RequestContext => {
    const response: RequestContext['response'] = { headers: {} };
    return {
      door,
      spendRateLimit: spenderFor(req, res),
      db: database.db,
      sql: database.sql,
      replicas,
      requestId: requestIdOf(res),
      authorization: req.headers.authorization,
      headers: req.headers,
      protector,
      audit,
      webhooks,
      idempotencyWaitSeconds: config.PARTNER_IDEMPOTENCY_WAIT_SECONDS,
      writeGate,
      eventWaiters,
      clientGone: eventWaiters ? () => clientGone(res) : undefined,
      identified: identifiedHolder ? identifiedHolder(req, res, door, response) : {},
      response,
    };
  };

  app.use(healthProbes(database, logger, replicas));

  // Built once: the document depends only on code and configuration (and, with no base URL configured, the origin asked).
  app.get(OPENAPI_PATH, openApiDocumentHandler(buildOpenApiDocument({ sandboxBaseUrl: config.PARTNER_SANDBOX_BASE_URL, productionBaseUrl: config.PARTNER_PRODUCTION_BASE_URL })));
  app.use(publicDocuments({ serverUrls: [config.PARTNER_SANDBOX_BASE_URL, config.PARTNER_PRODUCTION_BASE_URL] }));
  app.use(GUIDES_PATH, securityHeaders(GUIDES_CONTENT_SECURITY_POLICY), partnerGuides());

  const partnerMiddlewares = [utf8Query(), jsonBody()];
  app.use(PARTNER_BASE_PATH, partnerMethods(logger), ...partnerMiddlewares, partnerRest((req, res) => createContext(req, res, 'rest'), logger));

  // The sandbox console talks tRPC to the same procedures, with the same keys, guard and body limit.
  app.use(
    '/api/trpc',
    refuseBatches,
    utf8Query(),
    jsonBody(),
    trpcExpress.createExpressMiddleware({
      router: partnerRouter,
      createContext: ({ req, res }) => createContext(req, res, 'console'),
      maxBodySize: MAX_BODY_BYTES,
      // The console sends one call per request (httpLink); refuseBatches answers a batch first, this is the backstop.
      allowBatching: false,
      // Headers a failure carries on REST (Retry-After, WWW-Authenticate) and those a procedure sets.
      responseMeta: ({ ctx, errors }) =>
        errors.length > 0 ? { headers: errorBodyFor(errors[0], ctx?.requestId ?? 'req_unknown', []).headers } : { headers: ctx?.response.headers ?? {} },
      // Logged as on REST: by what the partner is answered (a refused value is a 400, not an error), never with SQL parameters.
      onError: ({ error, req }) => logIfUnexpected(logger, req.res!, errorBodyFor(error, requestIdOf(req.res!), []), error),
    }),
  );

  if (consoleDir) {
    app.use('/console', securityHeaders(CONSOLE_CONTENT_SECURITY_POLICY));
    // No source maps, even from a build made before they were turned off (apps/sandbox-console/vite.config.ts).
    app.get(/^\/console\/.*\.map$/, (_req, res) => sendError(res, new PartnerError('not_found', 'No such route.'), logger));
    app.use('/console', express.static(consoleDir, { index: 'index.html', fallthrough: true }));
    app.get(/^\/console(\/.*)?$/, (_req, res) => res.sendFile('index.html', { root: consoleDir }));
  }

  app.use((_req: Request, res: Response) => {
    sendError(res, new PartnerError('not_found', 'No such route.'), logger);
  });
  // Body-parser failures (malformed JSON, too large, wrong charset) and anything unexpected.
  const answerError = (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return;
    sendError(res, bodyParserError(error, req) ?? error, logger);
  };
  app.use(answerError);
  // Partner calls: a route table from the router's OpenAPI meta, in front of express (http/partner-dispatcher.ts).
  return withPartnerDispatcher(app, {
    basePath: PARTNER_BASE_PATH,
    everyRequest,
    partnerMiddlewares,
    createContext: (req, res) => createContext(req, res, 'rest'),
    answerError,
    logger,
  });
}
