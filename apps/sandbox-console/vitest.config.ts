import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Unit tests of the console's pure helpers, its tables checked against the server (contract/), and the browser tests (real API, real PostgreSQL, headless Chromium).
export default defineConfig({
  test: {
    name: 'sandbox-console',
    environment: 'node',
    include: ['src/**/*.test.ts', 'contract/**/*.test.ts', 'e2e/**/*.test.ts'],
    globalSetup: [fileURLToPath(new URL('../../libs/db/src/testing/global-setup.ts', import.meta.url)), './e2e/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
