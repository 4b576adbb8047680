import { defineConfig } from 'vitest/config';

// No database: the contract is constants, schemas and pure functions.
export default defineConfig({ test: { name: 'contract', environment: 'node', include: ['src/**/*.test.ts'] } });
