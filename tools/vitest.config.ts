import { projectTestConfig } from '../libs/db/src/testing/vitest-project.ts';

const shared = projectTestConfig('tools');

// Tools keep no src/ folder: each tool's tests sit beside it.
// The admin CLI's tests run its bundle: build it once up front (admin/testing/build-admin.ts).
// Isolated: admin/webhooks.test.ts and e2e/traces.test.ts change process.env for their own file.
export default {
  ...shared,
  test: { ...shared.test, isolate: true, globalSetup: [...(shared.test?.globalSetup as string[]), './admin/testing/build-admin.ts'], include: ['admin/**/*.test.ts', 'start/**/*.test.ts', 'e2e/**/*.test.ts', 'openapi/**/*.test.ts', 'postman/**/*.test.ts', 'docs/**/*.test.ts', 'examples/**/*.test.ts', 'setup/**/*.test.ts'] },
};
