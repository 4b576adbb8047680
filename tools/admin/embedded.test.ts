import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureEmbeddedPostgres, freePort } from '@lop/db';
import { adminWithEnvironment } from './testing/run-admin';

// As root the embedded server runs as the `postgres` user, which must be able to enter the folder.
const dataDir = mkdtempSync(join(tmpdir(), 'lop-admin-embedded-'));
chmodSync(dataDir, 0o755);
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer().listen(port, '127.0.0.1', () => server.close(() => resolve(false)));
    server.once('error', () => resolve(true));
  });
}

describe('admin without DATABASE_URL', () => {
  // Sequential: both tests use the one data folder, as `npm start` and the CLI do.
  it('starts the embedded PostgreSQL when none runs, keeps its log lines out of --json output, and stops it again', async () => {
    const port = await freePort();
    const run = await adminWithEnvironment({ DATABASE_URL: '', PARTNER_DATA_DIR: dataDir, PARTNER_EMBEDDED_PG_PORT: String(port) }, 'seed-demo', '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(run.json()).toMatchObject({ sandbox_key: expect.stringMatching(/^lop_test_/) });
    expect(await portInUse(port)).toBe(false);
  });

  it('uses the embedded PostgreSQL a running `npm start` already serves, and leaves it running', async () => {
    const port = await freePort();
    const server = await ensureEmbeddedPostgres({ dataDir: join(dataDir, 'postgres'), port });
    try {
      expect(server.startedHere).toBe(true);
      const run = await adminWithEnvironment({ DATABASE_URL: '', PARTNER_DATA_DIR: dataDir, PARTNER_EMBEDDED_PG_PORT: String(port) }, 'clients', 'list', '--json');
      expect(run.code, run.stderr).toBe(0);
      expect(run.json()).toContainEqual(expect.objectContaining({ name: 'Demo Digital Health' }));
      expect(await portInUse(port)).toBe(true);
    } finally {
      await server.stop();
    }
  });
});
