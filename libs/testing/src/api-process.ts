import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '@lop/db';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface SpawnedApi {
  /** Origin, e.g. http://127.0.0.1:41234 */
  url: string;
  /** Origin of the internal metrics endpoint, when PARTNER_METRICS_PORT was given. */
  metricsUrl?: string;
  child: ChildProcess;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last 8,000 characters it wrote to stderr. */
  stderr(): string;
  /** Sends the signal (SIGKILL unless told) and resolves once the process has exited; nothing when it already has. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface SpawnOptions {
  /** The port to listen on; a free one unless given (a restart gives the port its predecessor had). */
  port?: number;
  /** Configuration variables over the defaults (HOST, PORT, LOG_LEVEL warn, a metrics port). */
  env?: Record<string, string>;
}

const running = new Set<ChildProcess>();

/** Kills every API process this test process spawned that is still running (afterEach/afterAll). */
export function killAllApiProcesses(): void {
  for (const child of running) child.kill('SIGKILL');
}

/**
 * The partner API as its own process (migrations, pg-boss sender, key-change listener), on
 * 127.0.0.1, from an esbuild bundle with npm packages external, as production runs it
 * (tools/build/run-bundled.mjs; rebuilt when the sources change). Resolves once /readyz answers
 * 200. It is started by path, not imported, so the CLI's tests (which may not import the API) use
 * it too; the projects that do are marked as depending on partner-api (docs/ci.md). What one process
 * encrypted the next can read only with the same PARTNER_ENCRYPTION_KEY: callers pass theirs in `env`.
 */
export async function spawnApiProcess(databaseUrl: string, options: SpawnOptions = {}): Promise<SpawnedApi> {
  const env = options.env ?? {};
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, ['tools/build/run-bundled.mjs', 'apps/partner-api/src/main.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', PARTNER_METRICS_PORT: '0', ...env },
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
    kill: async (signal = 'SIGKILL') => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await exited;
    },
  };
}
