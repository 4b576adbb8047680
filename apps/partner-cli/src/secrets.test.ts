import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existingSecretFor, forwardKey, secretFor, secretsFile } from './secrets';

/**
 * The kept signing secrets under concurrency: several `lop` processes starting at once each keep
 * the secret they print (a lock and a whole-file replace), and a URL is one key however it
 * is spelled.
 */

const KEEP_SECRETS = fileURLToPath(new URL('./testing/keep-secrets.ts', import.meta.url));
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

let configHome: string;
const previous = process.env.XDG_CONFIG_HOME;
beforeEach(() => {
  configHome = mkdtempSync(join(tmpdir(), 'lop-secrets-test-'));
  process.env.XDG_CONFIG_HOME = configHome;
});
afterEach(() => {
  if (previous === undefined) delete process.env.XDG_CONFIG_HOME;
  else process.env.XDG_CONFIG_HOME = previous;
  rmSync(configHome, { recursive: true, force: true });
});

const stored = () => JSON.parse(readFileSync(secretsFile(), 'utf8')).secrets as Record<string, string>;

interface Printed {
  url: string;
  key: string;
  secret: string;
  source: string;
}

/** Child processes, each a separate module instance, released together once all have started. */
async function concurrently(urlsPerProcess: string[][]): Promise<Printed[][]> {
  const goFile = join(configHome, 'go');
  const children = urlsPerProcess.map((urls) => {
    const child = spawn(process.execPath, ['--import', 'tsx', KEEP_SECRETS, goFile, ...urls], { cwd: PACKAGE_DIR, env: { ...process.env, XDG_CONFIG_HOME: configHome }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const ready = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', () => stdout.startsWith('ready\n') && resolve());
      child.once('exit', () => reject(new Error(`exited before ready: ${stderr}`)));
    });
    const done = new Promise<Printed[]>((resolve, reject) =>
      child.once('close', (code) => {
        if (code !== 0) return reject(new Error(`exit ${code}: ${stderr}`));
        resolve(
          stdout
            .split('\n')
            .slice(1)
            .filter(Boolean)
            .map((line) => JSON.parse(line) as Printed),
        );
      }),
    );
    return { ready, done };
  });
  await Promise.all(children.map((c) => c.ready));
  writeFileSync(goFile, '');
  return Promise.all(children.map((c) => c.done));
}

describe('several lop processes at once keep every secret they print', () => {
  it('eight processes, each keeping secrets for its own URLs and two shared ones: every printed secret is in the file, a shared URL got one secret', async () => {
    const own = (i: number) => [1, 2, 3].map((n) => `http://127.0.0.1:${4000 + i}/hooks/${n}`);
    const shared = ['http://localhost:5000/hooks', 'http://127.0.0.1:5000/hooks/'];
    const rounds = await concurrently(Array.from({ length: 8 }, (_, i) => [...own(i), ...(i % 2 ? shared : [...shared].reverse())]));

    const file = stored();
    const printed = rounds.flat();
    expect(printed).toHaveLength(8 * 5);
    for (const line of printed) expect(file[line.key], `${line.url} printed ${line.secret}`).toBe(line.secret);
    // The two spellings of the shared URL are one key; whoever came first made its secret, everyone else read it.
    const sharedLines = printed.filter((line) => shared.includes(line.url));
    expect(new Set(sharedLines.map((line) => line.key))).toEqual(new Set(['http://localhost:5000/hooks']));
    expect(new Set(sharedLines.map((line) => line.secret)).size).toBe(1);
    expect(sharedLines.filter((line) => line.source === 'new')).toHaveLength(1);
    expect(Object.keys(file)).toHaveLength(8 * 3 + 1);
    // Nothing left behind: no lock, no temporary file.
    expect(readdirSync(join(configHome, 'lop')).sort()).toEqual(['forward-secrets.json']);
  }, 120_000);
});

describe('the lock', () => {
  it('a lock left by a process that is gone (not refreshed for longer than it may be held) is taken over', async () => {
    const lock = `${secretsFile()}.lock`;
    mkdirSync(lock, { recursive: true });
    const longAgo = new Date(Date.now() - 60_000);
    utimesSync(lock, longAgo, longAgo);
    const { secret } = await secretFor(new URL('http://localhost:4000/hooks'));
    expect(stored()).toEqual({ 'http://localhost:4000/hooks': secret });
    expect(existsSync(lock)).toBe(false);
  });

  it('a lock held by another process is waited for, not broken', async () => {
    const lock = `${secretsFile()}.lock`;
    mkdirSync(lock, { recursive: true });
    let settled = false;
    const pending = secretFor(new URL('http://localhost:4000/hooks')).finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    expect(existsSync(secretsFile())).toBe(false);
    rmSync(lock, { recursive: true });
    const { secret } = await pending;
    expect(stored()).toEqual({ 'http://localhost:4000/hooks': secret });
  });
});

describe('a forward URL is one key however it is spelled', () => {
  it('host case, default port, the loopback names, trailing slashes and a fragment do not make another key; a path, port or query does', () => {
    const key = (text: string) => forwardKey(new URL(text));
    for (const same of ['http://LOCALHOST:4000/hooks', 'http://127.0.0.1:4000/hooks', 'http://[::1]:4000/hooks/', 'http://localhost:4000/hooks#x', 'HTTP://localhost:4000/hooks//']) {
      expect(key(same), same).toBe('http://localhost:4000/hooks');
    }
    expect(key('https://Example.test:443/')).toBe('https://example.test');
    expect(key('http://example.test:80/a/')).toBe('http://example.test/a');
    for (const other of ['http://localhost:4001/hooks', 'http://localhost:4000/hooks/v2', 'http://localhost:4000/hooks?tenant=b', 'https://localhost:4000/hooks', 'http://127.0.0.2:4000/hooks']) {
      expect(key(other), other).not.toBe('http://localhost:4000/hooks');
    }
  });

  it('a secret kept by an earlier lop under the URL as it was typed is found under any spelling, and moves to the normalised key', async () => {
    mkdirSync(join(configHome, 'lop'), { recursive: true, mode: 0o700 });
    writeFileSync(secretsFile(), JSON.stringify({ version: 1, secrets: { 'http://127.0.0.1:4000/hooks': 'whsec_kept_by_an_older_lop', 'http://localhost:9000/': 'whsec_other' } }), { mode: 0o600 });
    expect(await existingSecretFor(new URL('http://localhost:4000/hooks/'))).toMatchObject({ secret: 'whsec_kept_by_an_older_lop', source: 'kept', key: 'http://localhost:4000/hooks' });
    expect(stored()).toEqual({ 'http://localhost:4000/hooks': 'whsec_kept_by_an_older_lop', 'http://localhost:9000/': 'whsec_other' });
    expect((await secretFor(new URL('http://[::1]:9000'))).secret).toBe('whsec_other');
    expect(stored()).toEqual({ 'http://localhost:4000/hooks': 'whsec_kept_by_an_older_lop', 'http://localhost:9000': 'whsec_other' });
  });

  it('existingSecretFor makes none: nothing kept and nothing given is null, and the file stays as it was', async () => {
    expect(await existingSecretFor(new URL('http://localhost:4000/hooks'))).toBeNull();
    expect(existsSync(secretsFile())).toBe(false);
  });
});
