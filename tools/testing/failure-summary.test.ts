import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { clearReports, formatFailures, readFailures, REPORT_FILE, testProjectRoots } from './failure-summary';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// Inside the repository (tmp/ is ignored by git), so the fixture's tests resolve vitest as ours do.
const fixture = join(repo, 'tools/testing/tmp', `summary-${process.pid}`);

describe("npm test's summary of what failed", () => {
  afterAll(() => rmSync(fixture, { recursive: true, force: true }));

  it("names every failed test and a file whose hook failed, from vitest's own JSON report, and nothing that passed", async () => {
    mkdirSync(fixture, { recursive: true });
    // A plain object: the fixture's config needs no import.
    writeFileSync(join(fixture, 'vitest.config.mjs'), "export default { test: { include: ['*.check.ts'] } };\n");
    writeFileSync(
      join(fixture, 'tests.check.ts'),
      "import { describe, expect, it } from 'vitest';\ndescribe('orders', () => {\n  it('passes', () => expect(1).toBe(1));\n  it('answers 201', () => expect(503).toBe(201));\n});\n",
    );
    writeFileSync(join(fixture, 'hook.check.ts'), "import { beforeAll, it } from 'vitest';\nbeforeAll(() => { throw new Error('no database'); });\nit('never runs', () => undefined);\n");
    clearReports([fixture]);
    const vitest = join(repo, 'node_modules/.bin/vitest');
    const run = promisify(execFile)(vitest, ['run', '--root', fixture, '--reporter=json', `--outputFile.json=${REPORT_FILE}`], { cwd: fixture, env: { ...process.env, CI: '1' } });
    await expect(run).rejects.toMatchObject({ code: 1 });

    const { failures, unreported } = readFailures([fixture]);
    expect(unreported).toEqual([]);
    const named = failures.map((f) => `${f.file} > ${f.test ?? '(file)'}`).sort();
    // The hook's failure fails the test it skipped; either way the file and its error are named.
    expect(named).toContain('tests.check.ts > orders answers 201');
    expect(named.some((n) => n.startsWith('hook.check.ts'))).toBe(true);
    expect(named.join('\n')).not.toContain('passes');
    const text = formatFailures(failures);
    expect(text).toContain('expected 503 to be 201');
    expect(text).toContain('no database');
  });

  it('says which project wrote no report, and a cleared report is not read again', () => {
    mkdirSync(fixture, { recursive: true });
    clearReports([fixture]);
    expect(readFailures([fixture])).toEqual({ failures: [], unreported: [fixture] });
  });

  it('finds every test project of the workspace, as Nx does, and nothing under node_modules', () => {
    const roots = testProjectRoots(repo);
    expect(roots).toEqual(expect.arrayContaining(['apps/partner-api', 'apps/sandbox-console', 'libs/domain', 'tools', 'tools/admin']));
    expect(roots.some((root) => root.includes('node_modules'))).toBe(false);
  });
});
