import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { generateSigningSecret } from '@lop/contract';

/**
 * The signing secret `lop listen` and `lop events resend` use for each forward URL, kept between
 * runs so a handler configured with it keeps verifying: in the user's config folder
 * ($XDG_CONFIG_HOME/lop, else ~/.config/lop; %APPDATA%\lop on Windows), owner-only (0600 in a
 * 0700 folder). `--secret` sets the URL's secret (and keeps it).
 */

const FILE = 'forward-secrets.json';

interface Store {
  version: 1;
  /** Forward URL (as URL.href) → whsec_… */
  secrets: Record<string, string>;
}

export function configFolder(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || (process.platform === 'win32' ? env.APPDATA : undefined) || join(homedir(), '.config');
  return join(base, 'lop');
}

export const secretsFile = (env: NodeJS.ProcessEnv = process.env) => join(configFolder(env), FILE);

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
  const folder = configFolder();
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(store, null, 2)}\n`, { mode: 0o600 });
  // Replaced whole: a reader never sees half a file. chmod: a file created by an older run with a wider mode is narrowed.
  renameSync(temporary, file);
  chmodSync(file, 0o600);
}

/**
 * The secret for `forwardTo`: `given` when passed (and kept from now on), else the one kept for
 * this URL, else a new one (kept). `source` says which, for the listener's banner.
 */
export function secretFor(forwardTo: URL, given?: string): { secret: string; source: 'given' | 'kept' | 'new'; file: string } {
  const file = secretsFile();
  const store = read(file);
  const kept = store.secrets[forwardTo.href];
  if (given === undefined && kept) return { secret: kept, source: 'kept', file };
  const secret = given ?? generateSigningSecret();
  if (kept !== secret) write(file, { version: 1, secrets: { ...store.secrets, [forwardTo.href]: secret } });
  return { secret, source: given === undefined ? 'new' : 'given', file };
}
