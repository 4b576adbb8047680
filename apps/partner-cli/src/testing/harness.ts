/**
 * The CLI's end-to-end tests drive `lop` as a partner would: the partner API as its own process
 * (@lop/testing's spawnApiProcess: the bundle production runs) on this run's fresh database, the
 * demo tenant seeded through the control plane, the CLI as a child process, and a local webhook
 * handler on 127.0.0.1. Nothing of the API is imported: the CLI project may depend on the domain,
 * db and testing libraries only (module boundaries), and that is all the seeding and spawning need.
 *
 * The CLI runs as the bundle `npm pack` ships (scripts/bundle.mjs, built once per file from the
 * current sources): it starts in a fraction of the time tsx needs. `via: 'bin'` runs it through
 * bin/lop.js from the sources instead, as `npx lop` does in the repository.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { connectDatabase, freePort, type DatabaseConnection } from '@lop/db';
import { type DemoSeedResult } from '@lop/domain';
import { fixtures, spawnApiProcess, testDatabaseUrl, type SpawnedApi } from '@lop/testing';

export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
export const LOP_BIN = fileURLToPath(new URL('../../bin/lop.js', import.meta.url));
const BUNDLE_SCRIPT = fileURLToPath(new URL('../../scripts/bundle.mjs', import.meta.url));

export interface TestService {
  /** The spec's {base_url}. */
  baseUrl: string;
  demo: DemoSeedResult;
  /** A production key of the demo client (all scopes). */
  productionKey: string;
  /** The bundled CLI for this file. */
  lopBundle: string;
  /** A GET below the base path, with the demo sandbox key unless another is given: the raw text and the parsed body. */
  get(path: string, key?: string): Promise<{ status: number; text: string; body: any }>;
  /** Stops the API process (SIGTERM, as a deploy does), leaving the database as it is. */
  stop(): Promise<void>;
  /** Starts the API process again on the same port and database; resolves once it is ready. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startService(): Promise<TestService> {
  const databaseUrl = testDatabaseUrl();
  const bundleDir = mkdtempSync(join(tmpdir(), 'lop-cli-test-'));
  const lopBundle = join(bundleDir, 'lop.mjs');
  execFileSync(process.execPath, [BUNDLE_SCRIPT, lopBundle], { stdio: 'ignore' });
  // The same port and key across restarts: `lop` reconnects to the address it was given, and what
  // one process encrypted, the next reads.
  const port = await freePort();
  const env = { PARTNER_DB_POOL_SIZE: '4', PARTNER_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
  const origin = `http://127.0.0.1:${port}`;
  let api: SpawnedApi;
  const startApi = async () => {
    api = await spawnApiProcess(databaseUrl, { port, env });
  };
  const stopApi = () => api.kill('SIGTERM');
  await startApi();

  // The run database is migrated (the test global setup); now the tenant.
  const connection: DatabaseConnection = connectDatabase(databaseUrl, { max: 2, applicationName: 'partner-cli-test-fixtures' });
  const f = fixtures(connection.db);
  const demo = await f.demo();
  const productionKey = await f.key(demo.client_id, 'production');
  await connection.close();

  const baseUrl = `${origin}${PARTNER_BASE_PATH}`;
  return {
    baseUrl,
    demo,
    productionKey,
    lopBundle,
    async get(path, key = demo.sandbox_key) {
      const response = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
      const text = await response.text();
      return { status: response.status, text, body: JSON.parse(text) };
    },
    stop: stopApi,
    start: startApi,
    async close() {
      rmSync(bundleDir, { recursive: true, force: true });
      await stopApi();
    },
  };
}

export interface LopResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A config folder of this test file's own: `lop` keeps signing secrets there, never in the real home. */
export const TEST_CONFIG_HOME = mkdtempSync(join(tmpdir(), 'lop-cli-config-'));

function lopEnv(service: TestService, env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env, LOP_BASE_URL: service.baseUrl, LOP_API_KEY: service.demo.sandbox_key, NO_COLOR: '1', XDG_CONFIG_HOME: TEST_CONFIG_HOME };
  delete base.FORCE_COLOR;
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete base[name];
    else base[name] = value;
  }
  return base;
}

export interface LopOptions {
  /** Run through bin/lop.js (the sources, through tsx) rather than the bundle. */
  via?: 'bundle' | 'bin';
}

const entry = (service: TestService, options: LopOptions) => (options.via === 'bin' ? LOP_BIN : service.lopBundle);

/** `lop <args>` to completion, as a child process. */
export function lop(service: TestService, args: string[], env: Record<string, string | undefined> = {}, options: LopOptions = {}): Promise<LopResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry(service, options), ...args], { cwd: REPO_ROOT, env: lopEnv(service, env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A long-running `lop` (listen, tail --follow): its output as it comes, Ctrl-C, and its end. */
export interface RunningLop {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout line the predicate accepts (lines seen earlier count). */
  line(predicate: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Ctrl-C, then the process's end. */
  interrupt(): Promise<LopResult>;
  /** Another signal (SIGTERM, SIGHUP), then the process's end. */
  signal(name: NodeJS.Signals): Promise<LopResult>;
  /** Resolves with the first stderr line the predicate accepts. */
  errLine(predicate: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  exited: Promise<LopResult>;
}

export function startLop(service: TestService, args: string[], env: Record<string, string | undefined> = {}, options: LopOptions = {}): RunningLop {
  const child = spawn(process.execPath, [entry(service, options), ...args], { cwd: REPO_ROOT, env: lopEnv(service, env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of waiters) wake();
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    wakeAll();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    wakeAll();
  });
  const exited = new Promise<LopResult>((resolve) =>
    child.once('close', (code) => {
      wakeAll();
      resolve({ code, stdout, stderr });
    }),
  );
  const waitFor = (text: () => string, predicate: (line: string) => boolean, timeoutMs: number) =>
    new Promise<string>((resolve, reject) => {
      const look = () => {
        const found = text()
          .split('\n')
          .find((l) => l && predicate(l));
        if (found !== undefined) {
          waiters.delete(look);
          clearTimeout(timer);
          resolve(found);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          waiters.delete(look);
          clearTimeout(timer);
          reject(new Error(`lop exited (${child.exitCode}) before the expected line:\n${stdout}\n${stderr}`));
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(look);
        reject(new Error(`no expected line within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
      }, timeoutMs);
      waiters.add(look);
      look();
    });
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    line: (predicate, timeoutMs = 20_000) => waitFor(() => stdout, predicate, timeoutMs),
    errLine: (predicate, timeoutMs = 20_000) => waitFor(() => stderr, predicate, timeoutMs),
    async interrupt() {
      child.kill('SIGINT');
      return exited;
    },
    async signal(name) {
      child.kill(name);
      return exited;
    },
  };
}

/** The NDJSON objects of a `--json` listen's stdout. */
export function jsonLines(stdout: string): any[] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  rawBody: string;
  receivedAt: number;
}

export interface Receiver {
  url: string;
  requests: ReceivedDelivery[];
  /** Resolves once `count` requests satisfy the predicate. */
  until(predicate: (requests: ReceivedDelivery[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A webhook handler on 127.0.0.1 that keeps every request as received and answers as `answer` says. */
export async function startReceiver(answer: (request: ReceivedDelivery, all: ReceivedDelivery[]) => number | Promise<number> = () => 204): Promise<Receiver> {
  const requests: ReceivedDelivery[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const request = { headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() };
      requests.push(request);
      const status = await answer(request, requests);
      if (!res.destroyed) {
        res.statusCode = status;
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    requests,
    async until(predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(requests)) {
        if (Date.now() > deadline) throw new Error(`the receiver did not get what was expected within ${timeoutMs} ms (${requests.length} requests)`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
