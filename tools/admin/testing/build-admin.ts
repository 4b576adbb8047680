import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Builds the admin CLI's bundle (tools/admin/run.mjs) once before the test files start, rather
 * than in each of the first calls that files make side by side.
 */
export default function setup(): void {
  const run = spawnSync(process.execPath, [fileURLToPath(new URL('../run.mjs', import.meta.url)), '--build'], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`building the admin CLI failed: ${run.stderr}`);
}
