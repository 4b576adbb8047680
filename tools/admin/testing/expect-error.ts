import { expect } from 'vitest';
import type { AdminRun } from './run-admin';

/** A usage error: exit code 2, nothing on stdout, one `error: …` line on stderr. */
export function expectUsageError(run: AdminRun, message: RegExp): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(/^error: [^\n]+\n$/);
  expect(run.stderr).toMatch(message);
}

/** A failure while running the command: exit code 1, nothing on stdout, one `error: …` line on stderr. */
export function expectFailure(run: AdminRun, message: RegExp): void {
  expect(run.code, run.stderr).toBe(1);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(/^error: [^\n]+\n$/);
  expect(run.stderr).toMatch(message);
}
