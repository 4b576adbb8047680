import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { freePort } from '@lop/db';
import { PARTNER_BASE_PATH } from '@lop/domain';

const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** One encryption key for every process a test starts, so they can read each other's sealed data. */
export const PROCESS_ENCRYPTION_KEY = randomBytes(32).toString('base64');

export interface ApiProcess {
  /** Origin, e.g. http://127.0.0.1:41234 */
  url: string;
  /** Origin of the internal metrics endpoint, when PARTNER_METRICS_PORT was given. */
  metricsUrl?: string;
  child: ChildProcess;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  /** A partner call below the base path, e.g. `/v1/orders`. */
  call(method: string, path: string, options?: { key?: string; json?: unknown; headers?: Record<string, string> }): Promise<{ status: number; headers: Headers; body: any; text: string }>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Kills every API process a test file started and that is still running (afterEach/afterAll). */
export function killAllApiProcesses(): void {
  for (const child of running) child.kill('SIGKILL');
}

/**
 * The partner API as its own process (migrations, pg-boss sender, key-change listener), on
 * 127.0.0.1, from an esbuild bundle with npm packages external, as production runs it
 * (tools/build/run-bundled.mjs; rebuilt when the sources change). Resolves once /readyz answers 200.
 */
export async function startApiProcess(databaseUrl: string, env: Record<string, string> = {}): Promise<ApiProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['tools/build/run-bundled.mjs', 'apps/partner-api/src/main.ts'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      PARTNER_METRICS_PORT: '0',
      PARTNER_DB_POOL_SIZE: '6',
      PARTNER_ENCRYPTION_KEY: PROCESS_ENCRYPTION_KEY,
      PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  running.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the API process exited early: ${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the API process was not ready in time: ${stderr}`);
    }
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const metricsPort = Number(env.PARTNER_METRICS_PORT ?? 0);
  return {
    url,
    metricsUrl: metricsPort > 0 ? `http://127.0.0.1:${metricsPort}` : undefined,
    child,
    exited,
    stderr: () => stderr,
    call: async (method, path, options = {}) => {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key) headers.authorization = `Bearer ${options.key}`;
      if (options.json !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(`${url}${PARTNER_BASE_PATH}${path}`, { method, headers, body: options.json === undefined ? undefined : JSON.stringify(options.json) });
      const text = await response.text();
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      return { status: response.status, headers: response.headers, body, text };
    },
    kill: async (signal = 'SIGKILL') => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
  };
}
