import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';

// Beside the sources in the repository; beside the file in a bundled build (tools/build/bundle.mjs).
export const migrationsFolder = [new URL('../migrations', import.meta.url), new URL('./migrations', import.meta.url)]
  .map((url) => fileURLToPath(url))
  .find((dir) => existsSync(dir))!;

// Arbitrary constant: serialises migration runs of concurrently starting replicas.
const MIGRATION_LOCK_ID = 7_402_118_331;

/** Applies every committed migration. Safe to call from several processes at once. */
export async function runMigrations(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    await migrate(drizzle(sql), { migrationsFolder });
    await sql`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Number of committed migrations not yet applied (0 when the schema is current). */
export async function pendingMigrationCount(sql: postgres.Sql): Promise<number> {
  const { readMigrationFiles } = await import('drizzle-orm/migrator');
  const expected = readMigrationFiles({ migrationsFolder });
  // No migrations table yet (a new database): everything is pending. Any other failure (the
  // database unreachable, not answering) is the caller's to report, never "migrating".
  const applied = await sql<{ hash: string }[]>`
    select hash from drizzle.__drizzle_migrations`.catch((error: { code?: string }) => {
    if (error.code === '42P01' || error.code === '3F000') return [] as { hash: string }[];
    throw error;
  });
  const appliedHashes = new Set(applied.map((row) => row.hash));
  return expected.filter((migration) => !appliedHashes.has(migration.hash)).length;
}
