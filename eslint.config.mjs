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
      // Dependencies point one way: apps → domain → db; tools may use everything; tests may use testing.
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: 'type:db', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:db'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:domain', 'type:db', 'type:testing'] },
            { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:app', 'type:domain', 'type:db', 'type:testing'] },
            // Test builders: apps' and tools' tests use them (their production code may not: see below).
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:domain', 'type:db'] },
          ],
        },
      ],
    },
  },
  {
    // The browser bundle takes only types from the server side (the tRPC router's type).
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
    // (the bench is a harness too: it measures deliveries against the test receiver).
    files: ['**/*.ts', '**/*.tsx'],
    ignores: ['**/*.test.ts', '**/*.test.tsx', '**/testing/**', '**/e2e/**', '**/vitest.config.ts', 'libs/testing/**', 'tools/bench/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: '@lop/testing', message: 'Test builders are for test files and test harnesses (**/*.test.ts, **/testing/**, **/e2e/**), not production code.' }] }],
    },
  },
];
