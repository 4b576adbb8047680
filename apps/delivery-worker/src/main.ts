// The delivery worker (webhook delivery with pg-boss) arrives with the webhooks work; until then it
// only proves its process lifecycle: it connects, migrates and exits cleanly on SIGTERM.
import { connectDatabase, locateDatabase, runMigrations } from '@lop/db';
import { loadConfig } from '@lop/domain';

export async function startDeliveryWorker(databaseUrl: string) {
  const database = connectDatabase(databaseUrl, { max: 2, applicationName: 'delivery-worker' });
  await database.sql`select 1`;
  return { close: () => database.close() };
}

async function main() {
  const config = loadConfig();
  const location = await locateDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.PARTNER_DATA_DIR, embeddedPort: config.PARTNER_EMBEDDED_PG_PORT });
  await runMigrations(location.url);
  const worker = await startDeliveryWorker(location.url);
  const stop = async () => {
    await worker.close();
    await location.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
