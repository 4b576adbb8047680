import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// `npm run lint:dependencies` (.dependency-cruiser.cjs) is what keeps libs/domain acyclic: these
// cases run the real rules on small trees, so a rule that stops biting fails here, not in review.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');

const trees: string[] = [];
afterAll(() => {
  for (const tree of trees) rmSync(tree, { recursive: true, force: true });
});

/** The rules each dependency breaks when depcruise reads `files` (path → source) laid out as the repository is. */
function violations(files: Record<string, string>): string[] {
  const tree = mkdtempSync(join(tmpdir(), 'lop-dependency-rules-'));
  trees.push(tree);
  writeFileSync(join(tree, 'tsconfig.base.json'), JSON.stringify({ compilerOptions: { module: 'ESNext', moduleResolution: 'bundler' } }));
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(tree, path)), { recursive: true });
    writeFileSync(join(tree, path), source);
  }
  // depcruise exits non-zero when it finds violations; its JSON report is on stdout either way.
  const run = spawnSync(process.execPath, [DEPCRUISE, '--config', CONFIG, '--output-type', 'json', 'libs'], { cwd: tree, encoding: 'utf8' });
  const report = JSON.parse(run.stdout) as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } };
  return report.summary.violations.map((violation) => `${violation.rule.name}: ${violation.from} → ${violation.to}`).sort();
}

describe('the dependency rules', () => {
  it('let a folder import the folders below it in the domain stack', () => {
    expect(
      violations({
        'libs/domain/src/events/append.ts': "import { code } from '../exceptions/resolution';\nexport const append = code;\n",
        'libs/domain/src/exceptions/resolution.ts': 'export const code = 1;\n',
      }),
    ).toEqual([]);
  });

  it('refuse an import up the stack, even with no cycle', () => {
    expect(
      violations({
        'libs/domain/src/events/append.ts': "import { order } from '../orders/orders';\nexport const append = order;\n",
        'libs/domain/src/orders/orders.ts': 'export const order = 1;\n',
      }),
    ).toEqual(['domain-stack: libs/domain/src/events/append.ts → libs/domain/src/orders/orders.ts']);
  });

  it('refuse a cycle anywhere, in an app as in the domain', () => {
    expect(
      violations({
        'libs/apps-like/src/a.ts': "import { b } from './b';\nexport const a = () => b;\n",
        'libs/apps-like/src/b.ts': "import { a } from './a';\nexport const b = () => a;\n",
      }),
    ).toEqual(['no-circular: libs/apps-like/src/a.ts → libs/apps-like/src/b.ts']);
  });

  it('refuse a domain folder with no place in the stack', () => {
    expect(
      violations({
        'libs/domain/src/newcomer/thing.ts': "import { code } from '../exceptions/resolution';\nexport const thing = code;\n",
        'libs/domain/src/exceptions/resolution.ts': 'export const code = 1;\n',
      }),
    ).toEqual(['domain-unlisted: libs/domain/src/newcomer/thing.ts → libs/domain/src/exceptions/resolution.ts']);
  });

  it('let a test file set its scene from anywhere in the domain', () => {
    expect(
      violations({
        'libs/domain/src/events/append.test.ts': "import { order } from '../orders/orders';\nexport const seen = order;\n",
        'libs/domain/src/orders/orders.ts': 'export const order = 1;\n',
      }),
    ).toEqual([]);
  });
});
