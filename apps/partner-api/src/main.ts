import type { Server } from 'node:http';
import { pino, type DestinationStream, type Logger } from 'pino';
import { connectDatabase, locateDatabase, runMigrations } from '@lop/db';
import { attachDeliveryQueue, ConfigError, loadConfig, LOOPBACK_ALLOWANCE_WARNING, openDeliveryQueue, protectorFor, webhookSettings, type Config } from '@lop/domain';
import { createApp } from './app';

export const REDACT_PATHS = ['req.headers.authorization', '*.authorization', '*.sandbox_key', '*.key', '*.secret', '*.patient', '*.ordering_provider', '*.aoe_answers', '*.clinical_notes'];

/** `destination` defaults to stdout; tests pass an in-memory stream to read what would be logged. */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, name: string, destination?: DestinationStream): Logger {
  const options = { name, level: config.LOG_LEVEL, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

export interface RunningApi {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** Starts the partner API on an already migrated database. */
export async function startPartnerApi(options: { config: Config; databaseUrl: string; logger: Logger; consoleDir?: string }): Promise<RunningApi> {
  const database = connectDatabase(options.databaseUrl, { max: options.config.PARTNER_DB_POOL_SIZE, applicationName: 'partner-api' });
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
  const app = createApp({ database, config: options.config, logger: options.logger, protector: protectorFor(options.config), consoleDir: options.consoleDir });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(options.config.PORT, options.config.HOST, () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.config.PORT;
  return {
    server,
    url: `http://${options.config.HOST}:${port}`,
    // Graceful: stop accepting, let in-flight requests finish, then release the pool.
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 10_000).unref();
      });
      detachWebhookQueue();
      await webhookQueue.boss.stop({ graceful: false });
      await database.close();
    },
  };
}

async function main() {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config, 'partner-api');
  const location = await locateDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.PARTNER_DATA_DIR, embeddedPort: config.PARTNER_EMBEDDED_PG_PORT });
  await runMigrations(location.url);
  const api = await startPartnerApi({ config, databaseUrl: location.url, logger });
  logger.info({ url: api.url, database: location.source }, 'partner API listening');
  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await api.close();
    await location.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
