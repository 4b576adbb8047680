import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCOPES } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { connectDatabase, createTestDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { bannerKeyFile, createKey, demoId } from '@lop/domain';
// Declares the `databaseUrl` the global setup provides.
import type {} from '../../libs/db/src/testing/global-setup';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

// Its own database and data folder: the banner key is one per database, and start.test.ts starts
// the service against the shared test database at the same time.
let database: TestDatabase;
let connection: DatabaseConnection;
const dataDir = mkdtempSync(join(tmpdir(), 'lop-banner-key-'));

beforeAll(async () => {
  database = await createTestDatabase(inject('databaseUrl'), 'bannerkey');
  connection = connectDatabase(database.url, { max: 2, applicationName: 'banner-key-test' });
});
afterAll(async () => {
  await connection?.close();
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** One `npm start` until its banner, then SIGTERM: the banner's key line and API base URL. */
async function startOnce(): Promise<{ key: string; note: string; apiBase: string; health: (key: string) => Promise<number> }> {
  const child = spawn(process.execPath, ['tools/build/run-bundled.mjs', 'tools/start/start.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: database.url, PARTNER_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', PARTNER_METRICS_PORT: '0' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 40_000;
    while (!stdout.includes('Stop with Ctrl-C.')) {
      if (child.exitCode !== null) throw new Error(`npm start exited early: ${stderr}`);
      if (Date.now() > deadline) throw new Error(`no banner in time; stdout: ${stdout} stderr: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [, key, note] = /Sandbox key\s+(lop_test_[0-9A-Za-z]{32,})\s+\((.*)\)/.exec(stdout) ?? [];
    const apiBase = /API base URL\s+(\S+)/.exec(stdout)![1];
    const health = async (candidate: string) => (await fetch(`${apiBase}/health`, { headers: { authorization: `Bearer ${candidate}` } })).status;
    // Checked while this start serves: the printed key works on the API it printed.
    expect(await health(key)).toBe(200);
    return { key, note, apiBase, health };
  } finally {
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }
}

const activeBannerKeys = async () =>
  (await connection.sql<{ n: number }[]>`select count(*)::int as n from api_keys where client_id = ${demoId('client')} and purpose = 'demo_banner' and revoked_at is null`)[0].n;

async function works(key: string): Promise<boolean> {
  const [row] = await connection.sql<{ revoked: boolean }[]>`select revoked_at is not null as revoked from api_keys where key_hash = encode(sha256(convert_to(${key}, 'UTF8')), 'hex')`;
  return row !== undefined && !row.revoked;
}

describe('npm start: the banner key', () => {
  it('is the same key on every start, one active at a time, kept 0600 in the data folder; keys an administrator made are untouched', async () => {
    const first = await startOnce();
    expect(first.note).toMatch(/^all scopes; kept in .*sandbox-key, the same on every start$/);
    const administratorKey = (await createKey(connection.db, { clientId: demoId('client'), environment: 'sandbox', scopes: [...SCOPES] })).key;

    const second = await startOnce();
    const third = await startOnce();
    expect([second.key, third.key]).toEqual([first.key, first.key]);
    expect(third.note).toMatch(/^all scopes; the same key as last start, kept in /);
    expect(statSync(bannerKeyFile(dataDir)).mode & 0o777).toBe(0o600);
    expect(await activeBannerKeys()).toBe(1);

    // The kept copy is lost (a new data folder, say): the next start revokes the old key for a new one.
    rmSync(bannerKeyFile(dataDir));
    const fourth = await startOnce();
    expect(fourth.key).not.toBe(first.key);
    expect(fourth.note).toMatch(/NEW: the previous banner key is revoked/);
    expect(await works(first.key)).toBe(false);
    expect(await works(fourth.key)).toBe(true);
    expect(await activeBannerKeys()).toBe(1);
    expect(await works(administratorKey)).toBe(true);
  }, 240_000);
});
