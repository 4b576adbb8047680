import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import postgres from 'postgres';
import { ensureEmbeddedPostgres } from './embedded';
import { freePort } from './free-port';

// As root the embedded server runs as the `postgres` user, which must be able to enter the folder.
const folder = mkdtempSync(join(tmpdir(), 'lop-embedded-'));
chmodSync(folder, 0o755);
const dataDir = join(folder, 'postgres');

/** The postmaster of the data folder and its guard (both run with `-D <folder>`), with their session. */
function postgresProcesses(): { pid: number; sid: number; args: string }[] {
  return execFileSync('ps', ['-eo', 'pid=,sid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null && match[3].includes(`-D ${dataDir}`))
    .map((match) => ({ pid: Number(match[1]), sid: Number(match[2]), args: match[3] }));
}

afterAll(() => {
  for (const { pid } of postgresProcesses()) process.kill(pid, 'SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

const eventually = async (check: () => boolean, withinMs: number) => {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
};

describe('embedded PostgreSQL', () => {
  it('runs in a session of its own (a terminal signal to its owner never reaches it) and stops when its owner dies, even by SIGKILL', { timeout: 120_000 }, async () => {
    const port = await freePort();
    // An owner process, as `npm start` or the admin CLI is.
    const owner = spawn(process.execPath, ['--import', 'tsx', '-e', `
      const { ensureEmbeddedPostgres } = await import(${JSON.stringify(fileURLToPath(new URL('./embedded.ts', import.meta.url)))});
      const server = await ensureEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, port: ${port} });
      process.stdout.write('ready ' + server.startedHere + '\\n');
      setInterval(() => undefined, 1000);
    `], { stdio: ['ignore', 'pipe', 'pipe'] });
    onTestFinished(() => void owner.kill('SIGKILL'));
    let output = '';
    owner.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    owner.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    expect(await eventually(() => output.includes('ready'), 90_000), output).toBe(true);
    expect(output).toContain('ready true');

    const running = postgresProcesses();
    expect(running.length).toBeGreaterThan(0);
    const ownerSession = Number(execFileSync('ps', ['-o', 'sid=', '-p', String(owner.pid)], { encoding: 'utf8' }));
    expect(running.every((p) => p.sid !== ownerSession), JSON.stringify({ ownerSession, running })).toBe(true);

    owner.kill('SIGKILL');
    // A fast shutdown: no process left, and the lock file removed as on a clean stop.
    expect(await eventually(() => postgresProcesses().length === 0, 15_000), JSON.stringify(postgresProcesses())).toBe(true);
    expect(existsSync(join(dataDir, 'postmaster.pid'))).toBe(false);

    // The next owner starts it again on the same folder.
    const again = await ensureEmbeddedPostgres({ dataDir, port });
    try {
      expect(again.startedHere).toBe(true);
    } finally {
      await again.stop();
    }
    expect(postgresProcesses()).toEqual([]);
  });

  it('two owners starting a folder with no database at once (a fresh clone\'s first test runs): one initialises it, both then serve from it', { timeout: 120_000 }, async () => {
    const fresh = join(folder, 'fresh');
    const port = await freePort();
    const servers = await Promise.all([ensureEmbeddedPostgres({ dataDir: fresh, port }), ensureEmbeddedPostgres({ dataDir: fresh, port })]);
    try {
      expect(servers.map((s) => s.startedHere).sort()).toEqual([false, true]);
      for (const server of servers) {
        const sql = postgres(server.url, { max: 1 });
        expect((await sql`select 1 as one`)[0].one).toBe(1);
        await sql.end();
      }
      // Nothing of the losing initialisation is left beside it.
      expect(readdirSync(folder).filter((name) => name.startsWith('fresh.initdb-'))).toEqual([]);
    } finally {
      for (const server of servers) await server.stop();
    }
  });

  it('two owners starting one folder at once (test runs of several projects): one starts it, the other waits for it to accept connections and uses it', { timeout: 120_000 }, async () => {
    const port = await freePort();
    await (await ensureEmbeddedPostgres({ dataDir, port })).stop(); // initialised before the race
    for (let round = 0; round < 3; round++) {
      const servers = await Promise.all([ensureEmbeddedPostgres({ dataDir, port }), ensureEmbeddedPostgres({ dataDir, port })]);
      try {
        expect(servers.map((s) => s.startedHere).sort()).toEqual([false, true]);
        const sql = postgres(servers.find((s) => !s.startedHere)!.url, { max: 1 });
        expect((await sql`select 1 as one`)[0].one).toBe(1);
        await sql.end();
      } finally {
        for (const server of servers) await server.stop();
      }
      expect(postgresProcesses()).toEqual([]);
    }
  });
});
