import { connectDatabase, locateDatabase, prepareSchema, type Database, type DatabaseLocation, type Sql } from '@lop/db';
import { attachDeliveryQueue, lazyDeliveryQueue, loadConfig, webhookSettings, type DeliveryQueue } from '@lop/domain';

export interface AdminSession {
  databaseUrl: string;
  /** The same connection as postgres.js, for domain functions written in SQL (security/key-rotation.ts, the audit trail's reads). */
  sql: Sql;
  /** pg-boss for webhook jobs, started only when a command needs it. */
  deliveryQueue: () => Promise<DeliveryQueue>;
}

/**
 * Runs one unit of work against the same database `npm start` uses: DATABASE_URL when set,
 * otherwise the project's embedded PostgreSQL — the running one, or started for this command
 * and stopped again afterwards.
 */
export async function withDatabase<T>(work: (db: Database, session: AdminSession) => Promise<T>): Promise<T> {
  const config = loadConfig();
  return withLocation(async (location) => {
    // The embedded database is npm start's, which migrates it anyway; a configured one (production)
    // is migrated only by `admin migrate`, and a schema this release cannot serve is refused.
    await prepareSchema(location.url, { migrate: location.source === 'embedded' });
    const connection = connectDatabase(location.url, { max: 2, applicationName: 'admin-cli' });
    // Commands that append events (laboratory operations) enqueue webhook deliveries in the same transaction.
    const webhooks = lazyDeliveryQueue({ databaseUrl: location.url, settings: webhookSettings(config).queue, role: 'sender', applicationName: 'admin-cli-webhooks' });
    const detach = attachDeliveryQueue(webhooks.get);
    try {
      return await work(connection.db, { databaseUrl: location.url, sql: connection.sql, deliveryQueue: webhooks.get });
    } finally {
      detach();
      await webhooks.close();
      await connection.close();
    }
  });
}

/** The database `npm start` uses, for the length of `work`: found (or started, embedded) and stopped again. */
export async function withLocation<T>(work: (location: DatabaseLocation) => Promise<T>): Promise<T> {
  const config = loadConfig();
  // The server's own log lines would corrupt --json output; keep them to explain a failed start.
  const serverLog: string[] = [];
  const location = await locateDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.PARTNER_DATA_DIR,
    embeddedPort: config.PARTNER_EMBEDDED_PG_PORT,
    log: (line) => serverLog.push(...line.split('\n')),
  }).catch((error: unknown) => {
    const reason = serverLog.filter((line) => /FATAL|ERROR|PANIC/.test(line)).at(-1);
    throw new Error(`${(error as Error).message}${reason ? ` (${reason.trim()})` : ''}`);
  });
  try {
    return await work(location);
  } finally {
    await location.stop();
  }
}
