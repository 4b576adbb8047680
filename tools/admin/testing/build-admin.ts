import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const RUNNER = fileURLToPath(new URL('../../build/run-bundled.mjs', import.meta.url));

/**
 * Builds the admin CLI's bundle (`npm run admin`'s, tools/build/run-bundled.mjs) once before the
 * test files start, rather than in each of the first calls that files make side by side.
 */
export default function setup(): void {
  const run = spawnSync(process.execPath, [RUNNER, '--inline', '--build', 'tools/admin/main.ts'], { cwd: fileURLToPath(new URL('../../../', import.meta.url)), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`building the admin CLI failed: ${run.stderr}`);
}
