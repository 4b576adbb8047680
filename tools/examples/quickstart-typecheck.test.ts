import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The typed-client quickstart compiles as partners compile it: `tsc --noEmit` under
 * `moduleResolution: NodeNext` (a Node ESM project: relative imports need their extension) and
 * under `Bundler` — both the complete example (partner-quickstart.ts) and the snippet in
 * docs/getting-started.md, next to a copy of the generated types.
 */

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const QUICKSTART = fileURLToPath(new URL('./partner-quickstart.ts', import.meta.url));
const TYPES = join(REPO_ROOT, 'apps/partner-cli/src/generated/partner-api.d.ts');
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

const RESOLUTIONS = [
  { moduleResolution: 'NodeNext', module: 'NodeNext' },
  { moduleResolution: 'Bundler', module: 'ESNext' },
] as const;

function tsc(files: string[], resolution: (typeof RESOLUTIONS)[number]): { status: number | null; output: string } {
  const flags = ['--noEmit', '--strict', '--skipLibCheck', '--target', 'ES2022', '--types', 'node', '--module', resolution.module, '--moduleResolution', resolution.moduleResolution];
  const result = spawnSync(process.execPath, [TSC, ...flags, ...files], { cwd: REPO_ROOT, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** The ```ts block of getting-started.md's typed-client section, in a package of its own (type: module, as a Node ESM project). */
const snippetDir = mkdtempSync(join(REPO_ROOT, 'tools/examples/.quickstart-snippet-'));
afterAll(() => rmSync(snippetDir, { recursive: true, force: true }));
function snippetProject(): string {
  const guide = readFileSync(join(REPO_ROOT, 'docs/getting-started.md'), 'utf8');
  const section = guide.slice(guide.indexOf('**A typed client**'));
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!code) throw new Error('no ts block after "A typed client" in docs/getting-started.md');
  mkdirSync(join(snippetDir, 'generated'), { recursive: true });
  copyFileSync(TYPES, join(snippetDir, 'generated/partner-api.d.ts'));
  writeFileSync(join(snippetDir, 'package.json'), JSON.stringify({ type: 'module' }));
  // The snippet's free names (the reader's own values), declared.
  const file = join(snippetDir, 'quickstart.ts');
  writeFileSync(file, `${code}\ndeclare const origin: string;\ndeclare const key: string;\nexport { data, error };\n`);
  return file;
}

describe('the typed-client quickstart compiles under moduleResolution NodeNext and Bundler', () => {
  const snippet = snippetProject();
  for (const resolution of RESOLUTIONS) {
    it(`tools/examples/partner-quickstart.ts and the docs/getting-started.md snippet with moduleResolution ${resolution.moduleResolution}`, () => {
      const result = tsc([QUICKSTART, snippet], resolution);
      expect(result.output).toBe('');
      expect(result.status).toBe(0);
    }, 120_000);
  }
});
