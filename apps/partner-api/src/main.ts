import { createServer, type Server } from 'node:http';
import { pino, type DestinationStream, type Logger } from 'pino';
import { Registry } from 'prom-client';
import { connectDatabase, errorForLog, locateDatabase, prepareSchema, startupFailure } from '@lop/db';
import {
  attachDeliveryQueue,
  ConfigError,
  errorBodyFor,
  EventWaiters,
  listenForEvents,
  loadConfig,
  LOOPBACK_ALLOWANCE_WARNING,
  LOG_REDACT_PATHS,
  metricsHandler,
  openDeliveryQueue,
  PartnerError,
  protectorFor,
  ReadAuditWriter,
  watchKeyring,
  RequestLogWriter,
  requestLogBodies,
  queryTimeoutsOf,
  registerBacklogGauges,
  registerReplicaMetrics,
  ReplicaSet,
  registerEventPartitionGauge,
  registerAuditMetrics,
  registerRequestLogMetrics,
  registerEventWaitMetrics,
  startTelemetry,
  traceLogFields,
  webhookSettings,
  type Config,
  type Telemetry,
} from '@lop/domain';
import { createApp } from './app';
import { newRequestId } from './http/request-id';

/** The domain's one list of redacted fields (security/redaction.ts), as pino paths. */
export const REDACT_PATHS = LOG_REDACT_PATHS;

/** Errors are logged without the SQL and parameters a failed query carries (they can hold what a partner sent). */
export const LOG_SERIALIZERS = { err: (error: unknown) => pino.stdSerializers.err(errorForLog(error) as Error) };

/**
 * `destination` defaults to stdout; tests pass an in-memory stream to read what would be logged.
 * A line written inside a traced request or attempt carries its trace_id and span_id.
 */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, name: string, destination?: DestinationStream): Logger {
  const options = { name, level: config.LOG_LEVEL, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, serializers: LOG_SERIALIZERS, mixin: traceLogFields };
  return destination ? pino(options, destination) : pino(options);
}

export interface RunningApi {
  server: Server;
  url: string;
  /** Origin of the internal Prometheus endpoint (`${metricsUrl}/metrics`), when metrics are served. */
  metricsUrl?: string;
  close(): Promise<void>;
}

export interface MetricsOptions {
  /** Internal port for GET /metrics; 0 = any free port (tests). */
  port: number;
  host?: string;
}

const listen = (server: Server, port: number, host: string) =>
  new Promise<string>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address();
      resolve(`http://${host}:${typeof address === 'object' && address ? address.port : port}`);
    });
  });

/**
 * The audit writer's own connection (docs/audit.md): one batch of read records commits at a time,
 * and the reads arriving meanwhile form the next batch. Two commits in flight made smaller batches
 * and more commits for the same reads (`npm run bench -- --audit`: 0.78 × unaudited throughput
 * with two; 0.897 × with one and the slimmer indexes of 0029, against a goal of 0.9 ×).
 */
const AUDIT_POOL_SIZE = 1;

/** Starts the partner API on an already migrated database; with `metrics`, also its internal Prometheus endpoint. */
export async function startPartnerApi(options: { config: Config; databaseUrl: string; logger: Logger; consoleDir?: string; metrics?: MetricsOptions }): Promise<RunningApi> {
  const database = connectDatabase(options.databaseUrl, {
    max: options.config.PARTNER_DB_POOL_SIZE,
    applicationName: 'partner-api',
    timeouts: queryTimeoutsOf(options.config),
  });
  // Read replicas (DATABASE_READ_URL): the reads a replica may answer go there, the rest to the primary.
  const replicas = options.config.DATABASE_READ_URL?.length
    ? new ReplicaSet({
        urls: options.config.DATABASE_READ_URL,
        primary: database.sql,
        maxLagSeconds: options.config.DATABASE_READ_MAX_LAG_SECONDS,
        maxLagBytes: options.config.DATABASE_READ_MAX_LAG_BYTES,
        connect: { max: options.config.PARTNER_DB_POOL_SIZE, applicationName: 'partner-api-reads', timeouts: queryTimeoutsOf(options.config), connectTimeoutSeconds: 2 },
      })
    : undefined;
  await replicas?.check();
  // Enqueue-only pg-boss (no workers here): webhook jobs are inserted in the transaction that writes the events.
  const webhookQueue = await openDeliveryQueue({
    databaseUrl: options.databaseUrl,
    settings: webhookSettings(options.config).queue,
    role: 'sender',
    applicationName: 'partner-api-webhooks',
    onError: (error) => options.logger.error({ err: error }, 'webhook queue error'),
  });
  const detachWebhookQueue = attachDeliveryQueue(webhookQueue);
  if (options.config.PARTNER_WEBHOOKS_ALLOW_LOOPBACK) options.logger.warn(LOOPBACK_ALLOWANCE_WARNING);
  const registry = options.metrics ? new Registry() : undefined;
  if (registry) registerBacklogGauges(registry, database.sql);
  if (registry && replicas) registerReplicaMetrics(registry, replicas);
  if (registry) registerEventPartitionGauge(registry, database.sql);
  const webhooks = webhookSettings(options.config, options.databaseUrl);
  // The audit records of reads (docs/audit.md) on a pool of their own on the primary: a read waits
  // for its record's commit, which must not queue behind the reads holding the main pool.
  const auditDatabase = connectDatabase(options.databaseUrl, { max: AUDIT_POOL_SIZE, applicationName: 'partner-api-audit', timeouts: queryTimeoutsOf(options.config) });
  const audit = new ReadAuditWriter(auditDatabase.sql, { maxInFlight: AUDIT_POOL_SIZE, disabled: options.config.PARTNER_BENCH_UNAUDITED_READS });
  if (registry) registerAuditMetrics(registry, audit);
  if (audit.disabled) options.logger.warn('PARTNER_BENCH_UNAUDITED_READS is set: reads are NOT audited (bench only, never in production)');
  const requestLog = new RequestLogWriter(database.sql, {
    bodies: requestLogBodies(),
    onDropped: (rows) => options.logger.warn({ component: 'request-log', rows }, 'sandbox request log buffer full: requests not logged'),
    onFailed: (error, rows) => options.logger.warn({ component: 'request-log', rows, err: error }, 'sandbox request log batch not written'),
  });
  if (registry) registerRequestLogMetrics(registry, requestLog);
  // New writes use the newest key version at once: the keyring is reloaded on every rotation's NOTIFY.
  const protector = protectorFor(options.config);
  const keyring = await watchKeyring(database.sql, protector, { onError: (error) => options.logger.error({ err: error, component: 'keyring' }, 'encryption keyring not loaded') });
  // Reads of GET /v1/events waiting with `wait`, woken by one LISTEN connection on the primary
  // (never a replica: a notification names a commit the primary has; events/waiters.ts).
  const eventWaiters = new EventWaiters({ perStream: options.config.PARTNER_EVENTS_WAITING_PER_CLIENT, perProcess: options.config.PARTNER_EVENTS_WAITING_MAX });
  const eventsListener = await listenForEvents(database.sql, eventWaiters);
  if (registry) registerEventWaitMetrics(registry, eventWaiters);
  const app = createApp({
    database,
    config: options.config,
    logger: options.logger,
    protector,
    consoleDir: options.consoleDir,
    metrics: registry,
    webhooks: { destination: webhooks.destination, attemptTimeoutMs: webhooks.attemptTimeoutMs },
    requestLog,
    replicas,
    audit,
    eventWaiters,
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(options.config.PORT, options.config.HOST, () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  // Requests Node's HTTP parser refuses (bad request line, control characters in a header) never
  // reach express; they still get the error envelope instead of Node's bare 400.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const id = newRequestId();
    // The envelope from the one error mapping; written by hand, since there is no response object here.
    const body = JSON.stringify(errorBodyFor(new PartnerError('invalid_request', 'The HTTP request is malformed.'), id, []).body);
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.config.PORT;
  // Internal only: scraped by Prometheus, never exposed with the partner port.
  const metricsServer = registry ? createServer(metricsHandler(() => [registry])) : undefined;
  const metricsUrl = metricsServer ? await listen(metricsServer, options.metrics!.port, options.metrics!.host ?? options.config.HOST) : undefined;
  return {
    server,
    url: `http://${options.config.HOST}:${port}`,
    metricsUrl,
    // Graceful: stop accepting, let in-flight requests finish, then release the pool.
    close: async () => {
      // Waiting reads answer their (empty) page now rather than hold the shutdown for up to 30 s.
      eventWaiters.close();
      await new Promise<void>((resolve) => {
        // Keep-alive connections whose last request finishes after close() would otherwise stay open until the fallback.
        const sweep = setInterval(() => server.closeIdleConnections(), 100);
        server.close(() => {
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 10_000).unref();
      });
      metricsServer?.close();
      metricsServer?.closeAllConnections();
      // What the last requests logged, written before the pool closes.
      await requestLog.close();
      await keyring.close();
      await eventsListener.close();
      // Every answered read's record is committed before its answer: nothing is left to write.
      await auditDatabase.close();
      detachWebhookQueue();
      await webhookQueue.boss.stop({ graceful: false });
      await replicas?.close();
      await database.close();
    },
  };
}

async function main() {
  let config: Config;
  let logger: Logger;
  let telemetry: Telemetry | undefined;
  try {
    config = loadConfig();
    logger = createLogger(config, 'partner-api');
    // Before the express app, the HTTP server and pg-boss's pool exist (libs/domain/src/telemetry/telemetry.ts).
    telemetry = await startTelemetry({ serviceName: 'partner-api', warn: (message) => logger.warn({ component: 'opentelemetry' }, message) });
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  const location = await locateDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.PARTNER_DATA_DIR, embeddedPort: config.PARTNER_EMBEDDED_PG_PORT });
  await prepareSchema(location.url, { migrate: config.PARTNER_MIGRATE_ON_START, onProgress: (line) => logger.info({ component: 'migrate' }, line) }).catch(async (error: unknown) => {
    await location.stop();
    throw error;
  });
  const metrics = config.PARTNER_METRICS_PORT > 0 ? { port: config.PARTNER_METRICS_PORT } : undefined;
  const api = await startPartnerApi({ config, databaseUrl: location.url, logger, metrics });
  logger.info({ url: api.url, metrics: api.metricsUrl ? `${api.metricsUrl}/metrics` : 'off', database: location.source }, 'partner API listening');
  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await api.close();
    await telemetry?.shutdown();
    await location.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error) => {
    console.error(startupFailure(error));
    process.exit(1);
  });
}
