import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@lop/db';
import { demoId } from '@lop/domain';
import { untilNotBusy } from '@lop/testing';
import { admin, bannerOf, npmStart, processesOf, REPO_ROOT, type Instance } from './testing';

const RESTARTS = 20;

const dataDir = mkdtempSync(join(tmpdir(), 'lop-restart-'));
chmodSync(dataDir, 0o755);
let receiver: Server | undefined;
let current: Instance | undefined;
afterAll(() => {
  for (const pid of [current?.npm.pid, ...processesOf(dataDir).map((p) => p.pid)]) {
    try {
      if (pid) process.kill(pid === current?.npm.pid ? -pid : pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm start on the embedded database', () => {
  it(`SIGTERM to the group and an immediate restart, ${RESTARTS} times, with traffic and webhook deliveries in flight: every request after each restart succeeds, each instance runs a PostgreSQL of its own, and the last stop leaves none behind`, { timeout: 900_000 }, async () => {
    // A slow receiver, so deliveries are in flight when each SIGTERM arrives and the stopping
    // instance drains for longer than the next one takes to start: the two overlap, every time.
    let received = 0;
    receiver = createHttpServer((request, response) => {
      received++;
      request.resume();
      request.once('end', () => setTimeout(() => response.writeHead(200).end(), 4_000));
    });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;

    // The same ports on every start, as a process manager restarting one service uses.
    const env = {
      DATABASE_URL: '',
      PARTNER_DATA_DIR: dataDir,
      PARTNER_EMBEDDED_PG_PORT: String(await freePort()),
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
      PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS: '0.5',
      PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
    };
    const failures: string[] = [];
    const identities: string[] = [];
    for (let cycle = 0; cycle < RESTARTS; cycle++) {
      current = npmStart(env);
      const banner = await bannerOf(current);
      const apiBase = /API base URL\s+(\S+)/.exec(banner)![1];
      const key = /Sandbox key\s+(lop_test_[0-9A-Za-z]{32,})/.exec(banner)![1];
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      if (cycle === 0) {
        admin(env, 'webhooks', 'create', '--client', demoId('client'), '--environment', 'sandbox', '--url', receiverUrl, '--events', 'all');
      }
      const subject = `restart-${cycle}-${randomBytes(3).toString('hex')}`;
      const call = async (what: string, init: RequestInit & { path: string }) => {
        try {
          // A 429 on a loaded machine (more of this client's writes at once than its slots let through) is sent again, as a partner does.
          const response = await untilNotBusy(async () => {
            const answer = await fetch(`${apiBase}${init.path}`, { ...init, headers: { ...headers, ...init.headers } });
            await answer.arrayBuffer();
            return answer;
          });
          if (response.status >= 300) failures.push(`cycle ${cycle}: ${what} → ${response.status}`);
        } catch (error) {
          failures.push(`cycle ${cycle}: ${what} → ${String((error as Error).cause ?? error)}`);
        }
      };
      await call('PUT subject', { path: `/subjects/${subject}`, method: 'PUT', body: '{}' });
      // Orders (each makes an event, so a delivery) and reads, side by side, until the SIGTERM.
      let stop = false;
      const loop = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const id = `restart-${cycle}-${w}-${i}-${randomBytes(3).toString('hex')}`;
          await call('POST /orders', {
            path: '/orders',
            method: 'POST',
            headers: { 'idempotency-key': id },
            body: JSON.stringify({ external_order_id: id, program_id: demoId('program:wellness-sbx'), item_id: demoId('item:wellness-sbx:CBC'), external_subject_id: subject, collection: 'in_person_draw' }),
          });
          await call('GET /events', { path: '/events?limit=10', method: 'GET' });
        }
      };
      const loops = Array.from({ length: 3 }, (_, w) => loop(w));
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      stop = true;
      await Promise.all(loops);

      const inFlight = received;
      process.kill(-current.npm.pid!, 'SIGTERM');
      // npm exits at once, without waiting for the service it ran (which drains, then stops its
      // PostgreSQL): the next cycle starts right away, as a process manager would.
      await current.exited;
      expect(failures, `${failures.slice(0, 5).join('\n')}\n--- npm start's output:\n${current.output().slice(-3000)}`).toEqual([]);
      if (cycle === 0) expect(inFlight, 'webhook deliveries in flight at the SIGTERM').toBeGreaterThan(0);
      // Each instance ran a PostgreSQL of its own: none used the one its predecessor was stopping.
      const identity = readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n').slice(0, 3).join(' ');
      expect(identities).not.toContain(identity);
      identities.push(identity);
    }
    // The last instance stops within its grace period (20 s), its database last and gone.
    const deadline = Date.now() + 25_000;
    while (processesOf(dataDir).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(processesOf(dataDir)).toEqual([]);
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('exits within its grace period when its database is already gone', { timeout: 120_000 }, async () => {
    const folder = mkdtempSync(join(tmpdir(), 'lop-restart-gone-'));
    chmodSync(folder, 0o755);
    const env = { ...process.env, DATABASE_URL: '', PARTNER_DATA_DIR: folder, PARTNER_EMBEDDED_PG_PORT: String(await freePort()), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
    // The service itself, without npm, so its own exit is what is timed.
    const service = spawn(process.execPath, ['tools/build/run-bundled.mjs', 'tools/start/start.ts'], { cwd: REPO_ROOT, env, detached: true });
    let output = '';
    service.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    service.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => service.once('exit', (code) => resolve(code)));
    try {
      const started = Date.now();
      while (!output.includes('Stop with Ctrl-C.')) {
        if (service.exitCode !== null || Date.now() - started > 90_000) throw new Error(`no banner: ${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // Its PostgreSQL goes away under it (an operator, the OOM killer).
      const [pid] = readFileSync(join(folder, 'postgres', 'postmaster.pid'), 'utf8').split('\n');
      process.kill(Number(pid), 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const stoppedAt = Date.now();
      process.kill(-service.pid!, 'SIGTERM');
      const code = await exited;
      expect(Date.now() - stoppedAt, output).toBeLessThan(22_000);
      expect(code).not.toBeNull();
      // Nothing of its embedded server is left: the guard has reaped the killed postmaster and gone.
      const deadline = Date.now() + 5_000;
      while (processesOf(folder).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(processesOf(folder)).toEqual([]);
    } finally {
      try {
        process.kill(-service.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      for (const { pid } of processesOf(folder)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
