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
    // One process per worker for all its files, not one per file: the stack each browser file
    // starts (API, worker, domain) is imported once (as in libs/db/src/testing/vitest-project.ts).
    isolate: false,
  },
});
