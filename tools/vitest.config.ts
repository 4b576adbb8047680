import { projectTestConfig } from '../libs/db/src/testing/vitest-project.ts';

const shared = projectTestConfig('tools');

// Tools keep no src/ folder: each tool's tests sit beside it. The admin CLI (admin/) is a project
// of its own, with its own tests (admin/vitest.config.ts).
// Isolated: e2e/traces.test.ts changes process.env for its own file.
export default {
  ...shared,
  test: { ...shared.test, isolate: true, include: ['start/**/*.test.ts', 'e2e/**/*.test.ts', 'upgrade/**/*.test.ts', 'openapi/**/*.test.ts', 'postman/**/*.test.ts', 'docs/**/*.test.ts', 'examples/**/*.test.ts', 'setup/**/*.test.ts', 'ci/**/*.test.ts', 'bench/**/*.test.ts', 'db/**/*.test.ts', 'testing/**/*.test.ts'] },
};
