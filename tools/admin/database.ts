import { connectDatabase, locateDatabase, runMigrations, type Database } from '@lop/db';
import { attachDeliveryQueue, lazyDeliveryQueue, loadConfig, webhookSettings, type DeliveryQueue } from '@lop/domain';

export interface AdminSession {
  databaseUrl: string;
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
    await runMigrations(location.url);
    const connection = connectDatabase(location.url, { max: 2, applicationName: 'admin-cli' });
    // Commands that append events (laboratory operations) enqueue webhook deliveries in the same transaction.
    const webhooks = lazyDeliveryQueue({ databaseUrl: location.url, settings: webhookSettings(config).queue, role: 'sender', applicationName: 'admin-cli-webhooks' });
    const detach = attachDeliveryQueue(webhooks.get);
    try {
      return await work(connection.db, { databaseUrl: location.url, deliveryQueue: webhooks.get });
    } finally {
      detach();
      await webhooks.close();
      await connection.close();
    }
  } finally {
    await location.stop();
  }
}
