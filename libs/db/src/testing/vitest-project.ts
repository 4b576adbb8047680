import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/** Settings every project's tests share: a real PostgreSQL database per run, no mocks of it. */
export function projectTestConfig(name: string) {
  return defineConfig({
    test: {
      name,
      environment: 'node',
      include: ['src/**/*.test.ts'],
      globalSetup: [fileURLToPath(new URL('./global-setup.ts', import.meta.url))],
      testTimeout: 30_000,
      hookTimeout: 60_000,
      pool: 'forks',
      // A test file's process is reused for the next file instead of a fresh one per file: the
      // workspace (express, tRPC, zod schemas, pg-boss, OpenTelemetry) is imported once per worker,
      // not once per file (partner-api spent 109 s of a 358 s run importing). Files share no state
      // but their database rows, which each keeps apart (its own tenant or database); a file that
      // changes process.env must ask for isolation (tools does).
      isolate: false,
    },
  });
}
