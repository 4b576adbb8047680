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
    },
  });
}
