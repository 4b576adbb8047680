/**
 * Node side of the console: where its built files are, and a build when they are missing or
 * older than the sources (vite takes about a second). Used by `npm start` and the browser tests.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const CONSOLE_ROOT = dirname(fileURLToPath(import.meta.url));
export const CONSOLE_DIST = join(CONSOLE_ROOT, 'dist');

const SOURCES = ['src', 'index.html', 'vite.config.ts', 'package.json'];

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((newest, entry) => Math.max(newest, newestMtime(join(path, entry))), stat.mtimeMs);
}

/** True when dist/index.html is missing or older than any source file. */
export function consoleBuildIsStale(): boolean {
  const built = join(CONSOLE_DIST, 'index.html');
  if (!existsSync(built)) return true;
  const sources = Math.max(...SOURCES.map((s) => join(CONSOLE_ROOT, s)).filter(existsSync).map(newestMtime));
  return sources > statSync(built).mtimeMs;
}

/** Builds the console when stale; returns the folder to serve. */
export async function ensureConsoleBuilt(options: { log?: (line: string) => void } = {}): Promise<{ dir: string; rebuilt: boolean }> {
  if (!consoleBuildIsStale()) return { dir: CONSOLE_DIST, rebuilt: false };
  options.log?.('building the sandbox console (apps/sandbox-console → dist)…');
  // A separate process with NODE_ENV=production: a caller under test (NODE_ENV=test) would otherwise get React's development build.
  const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin/vite.js');
  // Built aside, then moved into place: a server never serves a half-written folder, and two
  // builds at once (npm start and the browser tests) do not empty each other's output.
  const staging = join(CONSOLE_ROOT, '../../tmp', `console-build-${process.pid}-${Date.now()}`);
  mkdirSync(dirname(staging), { recursive: true });
  const child = spawn(process.execPath, [vite, 'build', '--logLevel', 'warn', '--outDir', staging, '--emptyOutDir'], {
    cwd: CONSOLE_ROOT,
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('exit', resolve));
  if (code !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`building the sandbox console failed (vite build exited with ${code})`);
  }
  rmSync(CONSOLE_DIST, { recursive: true, force: true });
  renameSync(staging, CONSOLE_DIST);
  return { dir: CONSOLE_DIST, rebuilt: true };
}

// Run as a program (`npm start` does, tools/start/console-build.ts): progress on stderr, the folder as JSON on stdout.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  ensureConsoleBuilt({ log: (line) => process.stderr.write(`${line}\n`) }).then(
    (built) => process.stdout.write(JSON.stringify(built)),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
