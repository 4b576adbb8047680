import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { generateSigningSecret } from '@lop/contract';
import lockfile from 'proper-lockfile';

/**
 * The signing secret `lop listen` and `lop events resend` use for each forward URL, kept between
 * runs so a handler configured with it keeps verifying: in the user's config folder
 * ($XDG_CONFIG_HOME/lop, else ~/.config/lop; %APPDATA%\lop on Windows), owner-only (0600 in a
 * 0700 folder). `--secret` sets the URL's secret (and keeps it).
 *
 * Several `lop` processes may start at once (a listen per handler, a resend while listening):
 * every read-change-write holds a lock (forward-secrets.json.lock, by proper-lockfile), and the
 * file is replaced whole (a temporary file, then rename), so no process's secret is lost and no
 * reader sees half a file. A lock whose process is gone (killed while holding it) is taken over.
 */

const FILE = 'forward-secrets.json';

interface Store {
  version: 1;
  /** Forward URL (as forwardKey spells it) → whsec_… */
  secrets: Record<string, string>;
}

export function configFolder(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || (process.platform === 'win32' ? env.APPDATA : undefined) || join(homedir(), '.config');
  return join(base, 'lop');
}

export const secretsFile = (env: NodeJS.ProcessEnv = process.env) => join(configFolder(env), FILE);

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The key a forward URL's secret is kept under: one handler, one key, however it is spelled.
 * URL already lower-cases the scheme and host and drops a default port (:80, :443); on top of
 * that `localhost`, `127.0.0.1` and `[::1]` are one loopback (kept as `localhost`), trailing
 * slashes of the path are dropped (`/hooks/` is `/hooks`: web frameworks route them alike), and
 * a fragment (never sent) is ignored. The query string stays: it may select another handler.
 */
export function forwardKey(url: URL): string {
  const key = new URL(url.href);
  if (LOOPBACK_HOSTS.has(key.hostname)) key.hostname = 'localhost';
  key.hash = '';
  const path = key.pathname.replace(/\/+$/, '');
  return `${key.protocol}//${key.host}${path}${key.search}`;
}

function read(file: string): Store {
  if (!existsSync(file)) return { version: 1, secrets: {} };
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<Store>;
    if (parsed && typeof parsed.secrets === 'object' && parsed.secrets !== null) return { version: 1, secrets: { ...parsed.secrets } };
  } catch {
    // A damaged file is replaced below rather than stopping the listener.
  }
  return { version: 1, secrets: {} };
}

function write(file: string, store: Store): void {
  // A name no other process uses: two writers never share a temporary file.
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(store, null, 2)}\n`, { mode: 0o600 });
  // Replaced whole: a reader never sees half a file. chmod: a file created by an older run with a wider mode is narrowed.
  renameSync(temporary, file);
  chmodSync(file, 0o600);
}

/**
 * proper-lockfile: the lock is a folder made atomically (mkdir) beside the file, its mtime
 * refreshed while held, so one left by a killed process is taken over once it is STALE_LOCK_MS old.
 */
const STALE_LOCK_MS = 5_000;
/** Waits for another process's lock for up to about 10 s (40 tries, 10 ms growing to 250 ms apart). */
const LOCK_RETRIES = { retries: 40, factor: 1.5, minTimeout: 10, maxTimeout: 250, randomize: true };

async function withLock<T>(file: string, work: () => T): Promise<T> {
  let release: () => Promise<void>;
  try {
    // realpath: false, the file itself may not exist yet.
    release = await lockfile.lock(file, { realpath: false, stale: STALE_LOCK_MS, retries: LOCK_RETRIES });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
    throw new Error(`could not lock ${file}.lock: another lop holds it; if no lop is running, delete that folder`);
  }
  try {
    return work();
  } finally {
    await release().catch(() => undefined); // Taken over as stale after a very long hold: nothing of ours to remove.
  }
}

/** The kept secret for a key: under the key itself, or under an older spelling of the same URL (an earlier lop kept URL.href). */
function keptFor(store: Store, url: URL, key: string): { secret: string; aliases: string[] } | null {
  const aliases = Object.keys(store.secrets).filter((stored) => {
    if (stored === key) return false;
    try {
      return forwardKey(new URL(stored)) === key;
    } catch {
      return false;
    }
  });
  // This exact spelling's own secret wins over another spelling's.
  const secret = store.secrets[key] ?? store.secrets[url.href] ?? aliases.map((alias) => store.secrets[alias])[0];
  return secret ? { secret, aliases } : null;
}

export interface KeptSecret {
  secret: string;
  /** `given`: --secret; `kept`: kept for this URL; `new`: made now (and kept). */
  source: 'given' | 'kept' | 'new';
  file: string;
  /** The URL as the secret is kept under it. */
  key: string;
}

/**
 * The secret for `forwardTo`: `given` when passed (and kept from now on), else the one kept for
 * this URL, else a new one (kept). `source` says which, for the listener's banner.
 */
export async function secretFor(forwardTo: URL, given?: string): Promise<KeptSecret> {
  return (await resolveSecret(forwardTo, given, true))!;
}

/** As secretFor, but never makes one: null when nothing is given and nothing is kept for this URL. */
export function existingSecretFor(forwardTo: URL, given?: string): Promise<KeptSecret | null> {
  return resolveSecret(forwardTo, given, false);
}

async function resolveSecret(forwardTo: URL, given: string | undefined, create: boolean): Promise<KeptSecret | null> {
  const file = secretsFile();
  const key = forwardKey(forwardTo);
  mkdirSync(configFolder(), { recursive: true, mode: 0o700 });
  return withLock(file, () => {
    const store = read(file);
    const kept = keptFor(store, forwardTo, key);
    if (given === undefined && !kept && !create) return null;
    const secret = given ?? kept?.secret ?? generateSigningSecret();
    // Kept under the normalised key only: an older spelling's entry moves there.
    if (store.secrets[key] !== secret || (kept?.aliases.length ?? 0) > 0) {
      const secrets = { ...store.secrets };
      for (const alias of kept?.aliases ?? []) delete secrets[alias];
      write(file, { version: 1, secrets: { ...secrets, [key]: secret } });
    }
    return { secret, source: given !== undefined ? 'given' : kept ? 'kept' : 'new', file, key };
  });
}
