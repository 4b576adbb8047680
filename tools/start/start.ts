/**
 * `npm start`: the whole service in one process for a newcomer — database (embedded unless
 * DATABASE_URL is set), migrations, demo tenant, partner API and delivery worker.
 */
import { join } from 'node:path';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { connectDatabase, freePort, locateDatabase, prepareSchema, startupFailure } from '@lop/db';
import { ConfigError, loadConfig, seedDemoWithBannerKey, startTelemetry, telemetryEnabled, type Config } from '@lop/domain';
import { createLogger, startPartnerApi } from '@lop/partner-api';
import { startDeliveryWorker } from '@lop/delivery-worker';
import { banner } from './banner';
import { buildConsole } from './console-build';

const SHUTDOWN_LIMIT_MS = 20_000;

function readConfig(): Config {
  try {
    const config = loadConfig();
    telemetryEnabled(); // the OTEL_* variables it reads are configuration too: a bad one stops here
    return config;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}

/**
 * Without configured base URLs, this service's own origin becomes the sandbox base URL, so the
 * OpenAPI document (and the reference and Postman, which read it) names a server that answers —
 * fixed at start, never taken from a request. A wildcard bind is reached through loopback.
 */
async function withOwnOrigin(config: Config): Promise<Config> {
  if (config.PARTNER_SANDBOX_BASE_URL || config.PARTNER_PRODUCTION_BASE_URL) return config;
  const port = config.PORT === 0 ? await freePort(config.HOST) : config.PORT;
  const host = ['0.0.0.0', '::', ''].includes(config.HOST) ? '127.0.0.1' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  return { ...config, PORT: port, PARTNER_SANDBOX_BASE_URL: `http://${host}:${port}${PARTNER_BASE_PATH}` };
}

async function main(): Promise<void> {
  const config = await withOwnOrigin(readConfig());
  const logger = createLogger(config, 'partner-service');
  // Before the API's express app, its HTTP server and pg-boss's pools exist (libs/domain/src/telemetry/telemetry.ts).
  const telemetry = await startTelemetry({ serviceName: 'partner-service', warn: (message) => logger.warn({ component: 'opentelemetry' }, message) });

  const location = await locateDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.PARTNER_DATA_DIR,
    embeddedPort: config.PARTNER_EMBEDDED_PG_PORT,
    log: (line) => logger.debug({ component: 'embedded-postgres' }, line),
  });
  // The last spans are exported once everything else has stopped.
  const stops: (() => Promise<void>)[] = [async () => telemetry?.shutdown(), () => location.stop()];
  const stopAll = async () => {
    for (const stop of [...stops].reverse()) await stop();
  };

  try {
    // A newcomer's database follows the checkout: npm start always migrates it first.
    await prepareSchema(location.url, { migrate: true, onProgress: (line) => logger.info({ component: 'migrate' }, line) });
    const seeding = connectDatabase(location.url, { max: 1, applicationName: 'demo-seed' });
    // The same sandbox key as last time, kept in the data folder (see seedDemoWithBannerKey).
    const demo = await seedDemoWithBannerKey(seeding.db, { dataDir: config.PARTNER_DATA_DIR }).finally(() => seeding.close());

    // The console is built here when missing or older than its sources (about a second with vite).
    const consoleDir = await buildConsole((line) => logger.info(line)).then(
      (dir) => dir,
      (error: unknown) => void logger.warn({ err: error }, 'the sandbox console could not be built; serving the API without it'),
    );
    const consoleBuilt = consoleDir !== undefined;
    // Stopped in reverse: the API stops taking requests and drains first, then the worker
    // finishes its deliveries, and the database (in a session of its own, out of reach of the
    // terminal's Ctrl-C; libs/db/src/embedded.ts) goes last.
    const worker = await startDeliveryWorker(location.url);
    stops.push(() => worker.close());
    const api = await startPartnerApi({ config, databaseUrl: location.url, logger, consoleDir });
    stops.push(() => api.close());

    process.stdout.write(banner({ apiUrl: api.url, demo, database: location, dataDir: join(config.PARTNER_DATA_DIR, 'postgres'), consoleBuilt }));
  } catch (error) {
    await stopAll().catch(() => undefined);
    throw error;
  }

  // Shut down in order: API, worker, then the database.
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // At once, before the drain: npm exits on the group's SIGTERM without waiting for this process,
    // so a process manager may start the next instance now; it must not use a database about to stop.
    location.retire();
    setTimeout(() => {
      logger.error('shutdown did not finish in time; exiting');
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS).unref();
    stopAll().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, shutdown);
}

main().catch((error: unknown) => {
  process.stderr.write(`npm start failed: ${startupFailure(error)}\n`);
  process.exit(1);
});
