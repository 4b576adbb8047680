import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CODE_NEEDS_MIGRATION, createTestDatabase, migrationsFolderOf, readSchemaVerdict, runMigrations, withDatabase, type TestDatabase } from '@lop/db';
import { testDatabaseUrl } from '@lop/testing';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const made: TestDatabase[] = [];
afterAll(async () => {
  for (const database of made) await database.drop();
});

/** The worker's bundle until it exits (it must not start here): exit code and stderr. */
function runWorker(databaseUrl: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['tools/build/run-bundled.mjs', 'apps/delivery-worker/src/main.ts'], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', PARTNER_WORKER_METRICS_PORT: '0' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(guard);
      resolve({ code, stderr });
    });
  });
}

describe('the delivery worker and the schema at start', () => {
  it('refuses a schema older than it serves with one sentence and exit code 1; it does not migrate it', async () => {
    const database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'worker-refuse', { migrated: false });
    made.push(database);
    // Two releases back: without the newest migration this release's code needs.
    const older = await migrationsFolderOf({ upTo: '0011_sandbox_request_log' });
    await runMigrations(database.url, { folder: older.folder }).finally(() => older.remove());
    const run = await runWorker(database.url);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `The database schema is older than this release serves (1 migration(s) missing, the first ${CODE_NEEDS_MIGRATION}): run \`npm run migrate\` with this release before starting it.\n`,
    );
    expect(await readSchemaVerdict(database.url)).toMatchObject({ servable: false, missing: [CODE_NEEDS_MIGRATION] });
  });
});
