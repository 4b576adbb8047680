import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The console's own builder: it builds apps/sandbox-console into its dist/ when missing or older than its sources. */
const CONSOLE_BUILDER = fileURLToPath(new URL('../../apps/sandbox-console/ensure-built.ts', import.meta.url));
/** Runs it from a cached bundle rather than through tsx (a second or two saved at every start). */
const RUNNER = fileURLToPath(new URL('../build/run-bundled.mjs', import.meta.url));

/**
 * Runs the console's builder as a program of its own, as `npm start` would run `vite build`, and
 * returns the folder to serve. A process rather than an import: `npm start` serves the files the
 * console builds, it does not depend on the console's code, so a console change does not make the
 * launcher (and everything in tools/) "affected" in CI (docs/ci.md).
 */
export async function buildConsole(log: (line: string) => void): Promise<string> {
  const child = spawn(process.execPath, [RUNNER, CONSOLE_BUILDER], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => String(chunk).split('\n').filter(Boolean).forEach(log));
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('exit', resolve));
  if (code !== 0) throw new Error(`the sandbox console's build exited with ${code}`);
  return (JSON.parse(out) as { dir: string }).dir;
}
