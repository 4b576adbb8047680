import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
// Declares the `databaseUrl` the global setup provides.
import type {} from '../../libs/db/src/testing/global-setup';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
// Never the developer's data folder: start keeps the banner key there, for the database it used.
const DATA_DIR = mkdtempSync(join(tmpdir(), 'lop-start-test-'));
afterAll(() => rmSync(DATA_DIR, { recursive: true, force: true }));

interface Started {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `npm start` without npm in between, so signals reach the service itself. */
function start(env: Record<string, string>): Started {
  const child = spawn(process.execPath, ['--import', 'tsx', 'tools/start/start.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: inject('databaseUrl'), PARTNER_DATA_DIR: DATA_DIR, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

async function bannerOf(started: Started): Promise<string> {
  const deadline = Date.now() + 25_000;
  while (!started.stdout().includes('Stop with Ctrl-C.')) {
    if (started.child.exitCode !== null) throw new Error(`npm start exited early: ${started.stderr()}`);
    if (Date.now() > deadline) throw new Error(`no banner in time; stdout: ${started.stdout()} stderr: ${started.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return started.stdout();
}

let running: Started | undefined;
afterEach(() => {
  running?.child.kill('SIGKILL');
  running = undefined;
});

describe('npm start', () => {
  it('prints a banner whose key and URLs work, and stops cleanly on SIGTERM', async () => {
    running = start({});
    const banner = await bannerOf(running);

    const apiBase = /API base URL\s+(\S+)/.exec(banner)?.[1];
    const key = /Sandbox key\s+(lop_test_[0-9A-Za-z]{32,})/.exec(banner)?.[1];
    expect(apiBase).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/public\/partner\/v1$/);
    expect(key).toBeDefined();
    const origin = new URL(apiBase!).origin;
    expect(banner).toContain(`OpenAPI          ${origin}/api/public/partner-openapi`);
    expect(banner).toContain(`${origin}/console`);
    expect(banner).toMatch(/Laboratory\s+[0-9a-f-]{36}/);
    expect(banner).toMatch(/API client\s+[0-9a-f-]{36}/);
    expect(banner).toContain(`curl -H "Authorization: Bearer ${key}" ${apiBase}/health`);

    const livez = await fetch(`${origin}/livez`);
    expect(livez.status).toBe(200);
    const health = await fetch(`${apiBase}/health`, { headers: { authorization: `Bearer ${key}` } });
    expect(health.status).toBe(200);
    expect(((await health.json()) as { data: unknown }).data).toMatchObject({ status: 'ok', environment: 'sandbox' });
    const openapi = await fetch(`${origin}/api/public/partner-openapi`);
    expect(openapi.status).toBe(200);

    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ code: 0, signal: null });
    expect(running.stderr()).toBe('');
    await expect(fetch(`${origin}/livez`)).rejects.toThrow();
  });

  it('refuses a bad configuration value with one line and exit code 2', async () => {
    running = start({ PORT: 'eighty' });
    expect(await running.exited).toEqual({ code: 2, signal: null });
    expect(running.stderr()).toMatch(/^invalid configuration: PORT: [^\n]+\n$/);
    expect(running.stdout()).toBe('');
  });
});
