import postgres from 'postgres';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, withDatabase, type TestDatabase } from '@lop/db';
import { testDatabaseUrl } from '@lop/testing';
import { killAllApiProcesses, startApiProcess } from './testing/api-process';

const made: TestDatabase[] = [];
afterEach(() => killAllApiProcesses());
afterAll(async () => {
  for (const database of made) await database.drop();
});

/** Production processes do not migrate by default, and refuse a schema they cannot serve (docs/operations.md § Upgrading). */
describe('the API process and the schema at start', () => {
  it('refuses an unmigrated database with one sentence, touching nothing', async () => {
    const database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'refuse', { migrated: false });
    made.push(database);
    const failure = await startApiProcess(database.url).then(
      () => undefined,
      (error: Error) => error,
    );
    // Its whole stderr: the sentence.
    expect(failure?.message.trimEnd()).toBe('the API process exited early: The database has no schema yet: run `npm run migrate` (or `npm run admin -- migrate`) with this release before starting it.');
    const sql = postgres(database.url, { max: 1, onnotice: () => undefined });
    try {
      const tables = await sql`select table_schema, table_name from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema')`;
      expect(tables).toEqual([]);
    } finally {
      await sql.end();
    }
  });

  it('migrates first when PARTNER_MIGRATE_ON_START is true, then serves', async () => {
    const database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'migrate-on-start', { migrated: false });
    made.push(database);
    const api = await startApiProcess(database.url, { PARTNER_MIGRATE_ON_START: 'true' });
    const ready = await fetch(`${api.url}/readyz`);
    expect(await ready.json()).toEqual({ status: 'ready' });
    await api.kill('SIGTERM');
  });
});
