/**
 * Proves the project graph makes `nx affected` right (docs/ci.md): each sample change is committed
 * in a temporary git worktree of HEAD, and `nx show projects --affected` for that commit must be
 * exactly the projects listed. Also: the committed docs/project-graph.json (docs/ci.md lists its
 * projects and edges) is what `nx graph` writes now, so it cannot go stale. Run by .ci/run and by the
 * pull-request workflow.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, appendFileSync, mkdirSync, rmSync, symlinkSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EVERYTHING = ['admin-cli', 'contract', 'db', 'delivery-worker', 'docs', 'domain', 'partner-api', 'partner-cli', 'sandbox-console', 'testing', 'tools'];
/** The published vocabulary stands on nothing of ours, so a change below it leaves it alone. */
const ALL_BUT_CONTRACT = EVERYTHING.filter((project) => project !== 'contract');

/** A file to touch, and the projects CI must then run. */
const CASES: { change: string; affected: string[]; why: string }[] = [
  { change: 'libs/db/src/client.ts', affected: ALL_BUT_CONTRACT, why: 'every project but the contract stands on the data layer' },
  { change: 'libs/contract/src/events.ts', affected: EVERYTHING.filter((project) => project !== 'db'), why: 'the published vocabulary: the domain, the console and the CLI read it' },
  { change: 'apps/sandbox-console/src/App.tsx', affected: ['sandbox-console'], why: 'the console (its e2e suite lives in it) and nothing else' },
  { change: 'apps/sandbox-console/e2e/browser.ts', affected: ['sandbox-console'], why: 'the e2e that drives the console' },
  { change: 'docs/errors.md', affected: ['docs'], why: 'a page is checked by the drift check' },
  { change: 'libs/domain/src/openapi/document.ts', affected: EVERYTHING.filter((p) => p !== 'db' && p !== 'contract'), why: 'the OpenAPI generator feeds the drift check' },
  {
    change: 'apps/partner-api/src/main.ts',
    affected: ['docs', 'partner-api', 'partner-cli', 'sandbox-console', 'tools'],
    why: "the CLI's tests start the API as a child process (an implicit dependency); the admin CLI's tests do not run",
  },
  { change: 'tools/admin/main.ts', affected: ['admin-cli', 'docs', 'tools'], why: "the admin CLI is a project of its own; tools' restart test runs it" },
  {
    change: 'libs/testing/src/tenant.ts',
    affected: ['admin-cli', 'delivery-worker', 'docs', 'partner-api', 'partner-cli', 'sandbox-console', 'testing', 'tools'],
    why: 'the test builders: every project whose tests use them, and what depends on those',
  },
  { change: '.dependency-cruiser.cjs', affected: ['docs', 'tools'], why: "the import rules: tools' ci/dependency-rules.test.ts runs them" },
  { change: 'tools/openapi/write-openapi.ts', affected: ['docs', 'tools'], why: 'the document writer is the drift check' },
  { change: 'apps/partner-cli/src/main.ts', affected: ['docs', 'partner-cli', 'tools'], why: 'the CLI owns the generated client types the drift check compares' },
  { change: 'tsconfig.json', affected: EVERYTHING, why: 'the TypeScript solution file: it makes every typecheck a tsc --build of project references' },
  { change: 'libs/db/src/testing/vitest-project.ts', affected: ALL_BUT_CONTRACT, why: 'the test settings every project with database tests shares' },
  { change: 'tsconfig.base.json', affected: EVERYTHING, why: 'every project compiles with these options' },
];

const NX_ENV = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };
const GRAPH_FILE = 'docs/project-graph.json';

/** A graph file's content with key order and edge order left out of the comparison. */
function canonicalGraph(json: string): string {
  const graph = JSON.parse(json) as { graph: { dependencies: Record<string, { target: string; type: string }[]> } };
  for (const edges of Object.values(graph.graph.dependencies)) edges.sort((a, b) => `${a.target} ${a.type}`.localeCompare(`${b.target} ${b.type}`));
  return JSON.stringify(graph, (_key, value) =>
    value && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b))) : value,
  );
}

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
      env: NX_ENV,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const affected = (JSON.parse(output) as string[]).sort();
    const ok = JSON.stringify(affected) === JSON.stringify([...sample.affected].sort());
    if (!ok) failures++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${sample.change} → ${affected.join(', ') || '(nothing)'}${ok ? '' : `; expected ${[...sample.affected].sort().join(', ')}`}  (${sample.why})`);
  }

  const written = join(work, 'project-graph.json');
  execFileSync('npx', ['nx', 'graph', `--file=${written}`], { cwd: ROOT, env: NX_ENV, stdio: 'ignore' });
  const current = existsSync(join(ROOT, GRAPH_FILE)) && canonicalGraph(readFileSync(join(ROOT, GRAPH_FILE), 'utf8')) === canonicalGraph(readFileSync(written, 'utf8'));
  if (!current) failures++;
  console.log(`${current ? 'ok  ' : 'FAIL'} ${GRAPH_FILE} is the graph Nx builds${current ? '' : `; run npx nx graph --file=${GRAPH_FILE} and commit it`}`);
} finally {
  git(ROOT, 'worktree', 'remove', '--force', tree);
  rmSync(work, { recursive: true, force: true });
}
if (failures > 0) {
  console.error(`${failures} check(s) failed: sample changes that affect the wrong projects, or a stale ${GRAPH_FILE}`);
  process.exit(1);
}
