import { connectDatabase, locateDatabase, runMigrations, type Database } from '@lop/db';
import { loadConfig } from '@lop/domain';

/**
 * Runs one unit of work against the same database `npm start` uses: DATABASE_URL when set,
 * otherwise the project's embedded PostgreSQL — the running one, or started for this command
 * and stopped again afterwards.
 */
export async function withDatabase<T>(work: (db: Database) => Promise<T>): Promise<T> {
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
    try {
      return await work(connection.db);
    } finally {
      await connection.close();
    }
  } finally {
    await location.stop();
  }
}
