import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@lop/db';

/**
 * What a partner installs: `npm pack` of this project is a package with no dependencies that
 * installs without the registry and runs `lop` from its bundle.
 */

const run = promisify(execFile);
const PROJECT = fileURLToPath(new URL('../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'lop-pack-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * npm's own settings when the suite runs under `npm test` must not steer these npm calls, nor the
 * FORCE_COLOR that Nx sets for its tasks colour `lop`'s messages.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== 'FORCE_COLOR'));
}

describe('npm pack makes a standalone package', () => {
  it('packs bin and bundle only, installs offline into an empty project, and `lop` runs from it', async () => {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: PROJECT, env: cleanEnv() });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('[')));
    expect(packed.files.map((f: { path: string }) => f.path).sort()).toEqual(['README.md', 'bin/lop.js', 'dist/lop.mjs', 'package.json']);
    // postpack leaves the working tree as it was.
    expect(readdirSync(PROJECT)).not.toContain('dist');

    const consumer = join(work, 'consumer');
    await run('mkdir', ['-p', consumer]);
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(work, packed.filename)], { cwd: consumer, env: cleanEnv() });
    // Nothing but the CLI itself was installed.
    expect(readdirSync(join(consumer, 'node_modules')).filter((name) => !name.startsWith('.'))).toEqual(['@lop']);

    const lop = join(consumer, 'node_modules', '.bin', 'lop');
    const help = await run(lop, ['--help'], { cwd: consumer, env: cleanEnv() });
    expect(help.stdout).toMatch(/^Usage: lop \[options\] \[command\]/);
    expect(help.stdout).toContain('listen [options]');

    // The bundle's HTTP client and error path work too: a service that is not there is exit code 1.
    const port = await freePort();
    const failed = await run(lop, ['scenarios', '--api-key', 'lop_test_x', '--base-url', `http://127.0.0.1:${port}/api/public/partner`], { cwd: consumer, env: cleanEnv() }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain(`error: unreachable: cannot reach http://127.0.0.1:${port}/api/public/partner (ECONNREFUSED)`);
  });
});
