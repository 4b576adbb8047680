// What failed, restated after every project has finished: with projects in parallel a failure's
// report scrolls away under the projects still running, and a CI log's tail then showed only
// "Failed tasks: sandbox-console:test" (stop 41). Read from each project's vitest JSON report.
import { existsSync, globSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** Where each project's vitest writes its JSON report, relative to the project's root (ignored by git). */
export const REPORT_FILE = join('test-artifacts', 'vitest-report.json');

/** The part of vitest's JSON reporter (the Jest-compatible shape) this summary reads. */
interface VitestJsonReport {
  testResults: {
    name: string;
    status: string;
    message?: string;
    assertionResults: { fullName: string; status: string; failureMessages?: string[] }[];
  }[];
}

export interface Failure {
  project: string;
  file: string;
  test?: string;
  message: string;
}

const MESSAGE_LINES = 6;

/** A message's first lines and the stack's first frame (where the test failed), colour codes removed. */
function shortMessage(text: string): string {
  // eslint-disable-next-line no-control-regex
  const all = text.replace(/\x1b\[[0-9;]*m/g, '').split('\n').filter((line) => line.trim() !== '');
  const frame = all.findIndex((line) => /^\s*at /.test(line));
  const lines = all.filter((line, i) => i === frame || !/^\s*at /.test(line));
  return lines.slice(0, MESSAGE_LINES).join('\n') + (lines.length > MESSAGE_LINES ? '\n…' : '');
}

function failuresOf(project: string, report: VitestJsonReport): Failure[] {
  const failures: Failure[] = [];
  for (const file of report.testResults) {
    const name = relative(project, file.name);
    const failed = file.assertionResults.filter((test) => test.status === 'failed');
    for (const test of failed) failures.push({ project, file: name, test: test.fullName, message: shortMessage((test.failureMessages ?? []).join('\n')) });
    // A file can fail with no failed test: an error in a hook or at import.
    if (failed.length === 0 && file.status === 'failed') failures.push({ project, file: name, message: shortMessage(file.message ?? 'the file failed') });
  }
  return failures;
}

/** Removes the reports a previous run left, so a project that did not run reports nothing. */
export function clearReports(projectRoots: string[]): void {
  for (const root of projectRoots) rmSync(join(root, REPORT_FILE), { force: true });
}

/** Every failure the projects' reports hold, and the projects that wrote no report (they did not get as far as testing). */
export function readFailures(projectRoots: string[]): { failures: Failure[]; unreported: string[] } {
  const failures: Failure[] = [];
  const unreported: string[] = [];
  for (const root of projectRoots) {
    const path = join(root, REPORT_FILE);
    if (!existsSync(path)) {
      unreported.push(root);
      continue;
    }
    failures.push(...failuresOf(root, JSON.parse(readFileSync(path, 'utf8')) as VitestJsonReport));
  }
  return { failures, unreported };
}

export function formatFailures(failures: Failure[]): string {
  return failures.map((f) => `✗ ${f.project}: ${f.file}${f.test ? ` > ${f.test}` : ''}\n${f.message.replace(/^/gm, '    ')}`).join('\n');
}

const NOT_PROJECTS = /(^|\/)(node_modules|\.data|\.nx|dist)(\/|$)/;

/** The test projects' roots, relative to `cwd`: each folder holding a vitest.config.ts, as the @nx/vitest plugin finds them. */
export function testProjectRoots(cwd: string): string[] {
  return globSync('**/vitest.config.ts', { cwd, exclude: (path) => NOT_PROJECTS.test(path) })
    .map((config) => dirname(config))
    .sort();
}
