/**
 * Proves the project graph makes `nx affected` right (docs/ci.md): each sample change is committed
 * in a temporary git worktree of HEAD, and `nx show projects --affected` for that commit must be
 * exactly the projects listed. Run by .ci/run and by the pull-request workflow.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, appendFileSync, mkdirSync, rmSync, symlinkSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EVERYTHING = ['db', 'delivery-worker', 'docs', 'domain', 'partner-api', 'partner-cli', 'sandbox-console', 'tools'];

/** A file to touch, and the projects CI must then run. */
const CASES: { change: string; affected: string[]; why: string }[] = [
  { change: 'libs/db/src/client.ts', affected: EVERYTHING, why: 'every project stands on the data layer' },
  { change: 'apps/sandbox-console/src/App.tsx', affected: ['sandbox-console'], why: 'the console (its e2e suite lives in it) and nothing else' },
  { change: 'apps/sandbox-console/e2e/browser.ts', affected: ['sandbox-console'], why: 'the e2e that drives the console' },
  { change: 'docs/errors.md', affected: ['docs'], why: 'a page is checked by the drift check' },
  { change: 'libs/domain/src/openapi/document.ts', affected: ['delivery-worker', 'docs', 'domain', 'partner-api', 'partner-cli', 'sandbox-console', 'tools'], why: 'the OpenAPI generator feeds the drift check' },
  { change: 'tools/openapi/write-openapi.ts', affected: ['docs', 'tools'], why: 'the document writer is the drift check' },
  { change: 'apps/partner-cli/src/main.ts', affected: ['docs', 'partner-cli', 'tools'], why: 'the CLI owns the generated client types the drift check compares' },
];

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=ci', '-c', 'user.email=ci@localhost', ...args], { cwd, encoding: 'utf8' });

const work = mkdtempSync(join(tmpdir(), 'lop-affected-'));
const tree = join(work, 'tree');
git(ROOT, 'worktree', 'add', '--detach', tree, 'HEAD');
let failures = 0;
try {
  // Nx and its plugins load from node_modules; the worktree borrows the checkout's.
  mkdirSync(join(tree, 'node_modules'));
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry !== '@lop' && !existsSync(join(tree, 'node_modules', entry))) symlinkSync(join(ROOT, 'node_modules', entry), join(tree, 'node_modules', entry));
  }
  for (const sample of CASES) {
    appendFileSync(join(tree, sample.change), '\n');
    git(tree, 'commit', '-q', '-a', '-m', `sample change: ${sample.change}`);
    const output = execFileSync('npx', ['nx', 'show', 'projects', '--affected', '--base=HEAD~1', '--head=HEAD', '--json'], {
      cwd: tree,
      encoding: 'utf8',
      env: { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const affected = (JSON.parse(output) as string[]).sort();
    const ok = JSON.stringify(affected) === JSON.stringify([...sample.affected].sort());
    if (!ok) failures++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${sample.change} → ${affected.join(', ') || '(nothing)'}${ok ? '' : `; expected ${[...sample.affected].sort().join(', ')}`}  (${sample.why})`);
  }
} finally {
  git(ROOT, 'worktree', 'remove', '--force', tree);
  rmSync(work, { recursive: true, force: true });
}
if (failures > 0) {
  console.error(`${failures} sample change(s) affect the wrong projects`);
  process.exit(1);
}
