import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { ensureEmbeddedPostgres, freePort } from '@lop/db';
import { demoId } from '@lop/domain';
import { processesOf } from './testing';
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

/**
 * `npm start` without npm in between, so signals reach the service itself. `ownGroup`: in a
 * process group of its own, as a terminal runs it, so a test can send Ctrl-C's SIGINT to the group.
 */
function start(env: Record<string, string>, { ownGroup = false } = {}): Started {
  const child = spawn(process.execPath, ['tools/build/run-bundled.mjs', 'tools/start/start.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: inject('databaseUrl'), PARTNER_DATA_DIR: DATA_DIR, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    detached: ownGroup,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

async function bannerOf(started: Started, withinMs = 25_000): Promise<string> {
  const deadline = Date.now() + withinMs;
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
    // npm start configures its own origin as the sandbox base URL: the document, the reference and
    // Postman get a real server, cacheable, whatever Host a request names.
    const openapi = await fetch(`${origin}/api/public/partner-openapi`, { headers: { 'x-forwarded-host': 'evil.example' } });
    expect(openapi.status).toBe(200);
    expect(openapi.headers.get('cache-control')).toBe('public, max-age=300');
    expect(((await openapi.json()) as { servers: unknown }).servers).toEqual([{ url: origin, description: expect.stringMatching(/sandbox/i) }]);

    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ code: 0, signal: null });
    expect(running.stderr()).toBe('');
    await expect(fetch(`${origin}/livez`)).rejects.toThrow();
  });

  it('Ctrl-C (SIGINT to the process group) with the embedded PostgreSQL, under create load: the API drains first, every acknowledged order is stored, no 503, exit 0, and PostgreSQL is gone', { timeout: 180_000 }, async () => {
    // Its own data folder and ports: a fresh embedded cluster, as on a newcomer's machine.
    const dataDir = mkdtempSync(join(tmpdir(), 'lop-start-ctrl-c-'));
    chmodSync(dataDir, 0o755);
    const pgPort = await freePort();
    const env = { DATABASE_URL: '', PARTNER_DATA_DIR: dataDir, PARTNER_EMBEDDED_PG_PORT: String(pgPort), PARTNER_CREATE_ORDER_RATE_LIMIT: '100000' };
    try {
      running = start(env, { ownGroup: true });
      const banner = await bannerOf(running, 120_000);
      const apiBase = /API base URL\s+(\S+)/.exec(banner)![1];
      const key = /Sandbox key\s+(lop_test_[0-9A-Za-z]{32,})/.exec(banner)![1];
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const subject = `ctrl-c-${randomBytes(3).toString('hex')}`;
      expect((await fetch(`${apiBase}/subjects/${subject}`, { method: 'PUT', headers, body: '{}' })).status).toBe(200);

      interface Outcome {
        status: number;
        at: number;
        orderId?: string;
        error?: string;
      }
      const outcomes: Outcome[] = [];
      let interruptedAt = Infinity;
      let stop = false;
      const worker = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const id = `ctrl-c-${w}-${i}-${randomBytes(3).toString('hex')}`;
          try {
            const response = await fetch(`${apiBase}/orders`, {
              method: 'POST',
              headers: { ...headers, 'idempotency-key': id },
              body: JSON.stringify({ external_order_id: id, program_id: demoId('program:wellness-sbx'), item_id: demoId('item:wellness-sbx:CBC'), external_subject_id: subject, collection: 'in_person_draw' }),
            });
            const body = (await response.json().catch(() => undefined)) as { data?: { order_id: string } } | undefined;
            outcomes.push({ status: response.status, at: Date.now(), orderId: body?.data?.order_id });
          } catch (error) {
            // The API has stopped accepting: connection refused or closed.
            outcomes.push({ status: 0, at: Date.now(), error: String((error as Error).cause ?? error) });
            if (Date.now() > interruptedAt) return;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      };
      const workers = Array.from({ length: 8 }, (_, w) => worker(w));
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const postgresBefore = processesOf(dataDir);
      expect(postgresBefore.length, 'the embedded PostgreSQL runs from the test folder').toBeGreaterThan(0);

      interruptedAt = Date.now();
      process.kill(-running.child.pid!, 'SIGINT');
      const exited = await running.exited;
      stop = true;
      await Promise.all(workers);

      const exitedAt = Date.now();
      expect(exited, running.stderr()).toEqual({ code: 0, signal: null });
      const created = outcomes.filter((o) => o.status === 201);
      if (process.env.START_DEBUG) {
        const count = (status: number) => outcomes.filter((o) => o.status === status).length;
        console.error(`exit ${exitedAt - interruptedAt} ms after SIGINT; 201: ${count(201)} (after SIGINT: ${created.filter((o) => o.at > interruptedAt).length}), refused: ${count(0)}, 503: ${count(503)}`);
      }
      expect(created.length).toBeGreaterThan(20);
      // Every answer was 201 until the API stopped accepting; after that only refused connections.
      expect(outcomes.filter((o) => o.status !== 201 && o.status !== 0), JSON.stringify(outcomes.filter((o) => o.status !== 201 && o.status !== 0).slice(0, 3))).toEqual([]);
      expect(outcomes.filter((o) => o.status === 0 && o.at < interruptedAt)).toEqual([]);
      // PostgreSQL shut down cleanly after the API: no process left, its lock file removed.
      expect(processesOf(dataDir)).toEqual([]);
      expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);

      // Every acknowledged order is stored.
      const server = await ensureEmbeddedPostgres({ dataDir: join(dataDir, 'postgres'), port: pgPort });
      try {
        const { default: postgres } = await import('postgres');
        const sql = postgres(server.url, { max: 1, onnotice: () => undefined });
        const stored = await sql<{ n: number }[]>`select count(*)::int as n from orders where id = any(${created.map((o) => o.orderId!)}::uuid[])`;
        await sql.end();
        expect(stored[0].n).toBe(created.length);
      } finally {
        await server.stop();
      }
    } finally {
      if (running?.child.pid) {
        try {
          process.kill(-running.child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      // Whatever a failed run left behind from this folder (only its processes, by pid).
      for (const { pid } of processesOf(dataDir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses a bad configuration value with one line and exit code 2', async () => {
    running = start({ PORT: 'eighty' });
    expect(await running.exited).toEqual({ code: 2, signal: null });
    expect(running.stderr()).toMatch(/^invalid configuration: PORT: [^\n]+\n$/);
    expect(running.stdout()).toBe('');
  });
});
