/**
 * Starts the whole service (`npm start`'s entry point) on a fresh database for tools that talk to
 * a running sandbox the way a partner does: the newman run of the Postman collection and the
 * partner quickstart. The database is new and migrated (on DATABASE_URL's server when set,
 * otherwise on an embedded PostgreSQL in a temporary folder); the key is the demo sandbox key the
 * service prints when it starts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { createTestDatabase, freePort, locateDatabase } from '@lop/db';
import { PROJECT_ROOT } from '@lop/domain';

export interface FreshSandbox {
  /** e.g. http://127.0.0.1:41234 */
  origin: string;
  /** The spec's {base_url}: origin + /api/public/partner */
  baseUrl: string;
  /** The demo sandbox key printed by the service (all scopes). */
  key: string;
  /** The service's database, for a tool that prepares data the way a long-used sandbox has it. */
  databaseUrl: string;
  /** Everything the service printed so far, for a failure report. */
  output(): string;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 20_000;

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    try {
      // Its own process group: the signal reaches everything the service started.
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      resolve();
    }
  });
}

export async function startFreshSandbox(label: string): Promise<FreshSandbox> {
  const dataDir = mkdtempSync(join(tmpdir(), `lop-${label}-`));
  // embedded PostgreSQL runs as the `postgres` OS user when we are root: it must reach the folder.
  chmodSync(dataDir, 0o755);
  const cleanups: (() => Promise<void>)[] = [async () => rmSync(dataDir, { recursive: true, force: true })];
  const cleanup = async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => undefined);
  };

  try {
    const server = await locateDatabase({ databaseUrl: process.env.DATABASE_URL || undefined, dataDir, embeddedPort: await freePort() });
    cleanups.push(() => server.stop());
    const database = await createTestDatabase(server.url, label.replace(/[^a-z0-9]/gi, '').toLowerCase());
    cleanups.push(() => database.drop());

    const port = await freePort();
    const child = spawn(join(PROJECT_ROOT, 'node_modules/.bin/tsx'), ['tools/start/start.ts'], {
      cwd: PROJECT_ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DATABASE_URL: database.url, PORT: String(port), HOST: '127.0.0.1', PARTNER_DATA_DIR: dataDir, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
    });
    cleanups.push(() => stopProcess(child));
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));

    const origin = `http://127.0.0.1:${port}`;
    const key = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the service did not print a sandbox key within ${START_TIMEOUT_MS / 1000} s:\n${output}`)), START_TIMEOUT_MS);
      const look = () => {
        const match = /Sandbox key\s+(lop_test_[0-9A-Za-z]+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      child.stdout!.on('data', look);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the service exited (code ${code}) before it was ready:\n${output}`));
      });
    });
    const ready = await fetch(`${origin}/readyz`);
    if (!ready.ok) throw new Error(`${origin}/readyz answered ${ready.status}:\n${output}`);

    return { origin, baseUrl: `${origin}${PARTNER_BASE_PATH}`, key, databaseUrl: database.url, output: () => output, stop: cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** Runs `body` against a fresh sandbox and stops it whatever happens; the exit code is body's. */
export async function withFreshSandbox(label: string, body: (sandbox: FreshSandbox) => Promise<number>): Promise<number> {
  const sandbox = await startFreshSandbox(label);
  let stopping = false;
  const onSignal = () => {
    if (stopping) return;
    stopping = true;
    void sandbox.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await body(sandbox);
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    await sandbox.stop();
  }
}
