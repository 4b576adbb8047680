import nx from '@nx/eslint-plugin';

export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  { ignores: ['**/dist', '**/out-tsc', '**/node_modules', '**/.data', 'docs/**', '**/vite.config.*.timestamp*'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Source code only: root-level config files (vitest.config.ts) may import the shared config.
    files: ['**/src/**/*.ts', '**/src/**/*.tsx'],
    rules: {
      // Dependencies point one way: apps → domain → db, and every layer may read the published
      // vocabulary (contract), which depends on nothing of ours; tools may use everything; tests may use testing.
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: 'type:contract', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'type:db', onlyDependOnLibsWithTags: ['type:contract'] },
            { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:db', 'type:contract'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:domain', 'type:db', 'type:contract', 'type:testing'] },
            { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:app', 'type:domain', 'type:db', 'type:contract', 'type:testing'] },
            // Test builders: apps' and tools' tests use them (their production code may not: see below).
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:domain', 'type:db', 'type:contract'] },
          ],
        },
      ],
    },
  },
  {
    // The browser bundle takes only types from the server side (the tRPC router's type); values
    // it shares with the API (event types, lifecycle values, paths) come from @lop/contract.
    files: ['apps/sandbox-console/src/**/*.ts', 'apps/sandbox-console/src/**/*.tsx'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '@lop/domain', allowTypeImports: true, message: 'The console may import only types from @lop/domain (import type { PartnerRouter }).' },
            { name: '@lop/db', message: 'The console never imports the database layer.' },
          ],
        },
      ],
    },
  },
  {
    // @lop/testing builds test tenants: test files and test harnesses may import it, production code never
    // (the bench is a harness too: it measures deliveries against the test receiver; so is the rolling upgrade it runs).
    files: ['**/*.ts', '**/*.tsx'],
    ignores: ['**/*.test.ts', '**/*.test.tsx', '**/testing/**', '**/e2e/**', '**/vitest.config.ts', 'libs/testing/**', 'tools/bench/**', 'tools/upgrade/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: '@lop/testing', message: 'Test builders are for test files and test harnesses (**/*.test.ts, **/testing/**, **/e2e/**), not production code.' }] }],
    },
  },
  {
    // The console bundles the contract for the browser: no Node built-ins in it (its tsconfig has no Node types either).
    files: ['libs/contract/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      // One setting of the rule for these files, so it repeats the @lop/testing ban above (a later block replaces a rule's options, it does not add to them).
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: '@lop/testing', message: 'Test builders are for test files and test harnesses, not production code.' }],
          patterns: [{ group: ['node:*'], message: '@lop/contract runs in the browser: no Node built-ins (take a function from the caller, as the signer takes its HMAC).' }],
        },
      ],
      'no-restricted-globals': ['error', { name: 'Buffer', message: '@lop/contract runs in the browser: use Uint8Array, btoa or TextEncoder.' }],
    },
  },
];
