import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connectDatabase, type DatabaseConnection } from '@lop/db';
import { testDatabaseUrl } from '@lop/testing';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface AdminRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as the one JSON document --json promises. */
  json(): any;
}

/** Runs the admin CLI as an administrator would (`npm run admin`'s launcher, the bundle): a separate process, against the test database. */
export function admin(...args: string[]): Promise<AdminRun> {
  return adminWithEnvironment({ DATABASE_URL: testDatabaseUrl() }, ...args);
}

export function adminWithEnvironment(env: Record<string, string>, ...args: string[]): Promise<AdminRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['tools/build/run-bundled.mjs', '--inline', 'tools/admin/main.ts', ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) }));
  });
}

/** A direct connection for checking what the CLI wrote. */
export function openTestDatabase(): DatabaseConnection {
  return connectDatabase(testDatabaseUrl(), { max: 2, applicationName: 'tools-tests' });
}
