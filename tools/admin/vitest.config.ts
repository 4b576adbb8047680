import { projectTestConfig } from '../../libs/db/src/testing/vitest-project.ts';

const shared = projectTestConfig('admin-cli');

// The admin CLI keeps no src/ folder: its tests sit beside its commands.
// They run its bundle: build it once up front (testing/build-admin.ts).
// Isolated: webhooks.test.ts changes process.env for its own file.
export default {
  ...shared,
  test: { ...shared.test, isolate: true, globalSetup: [...(shared.test?.globalSetup as string[]), './testing/build-admin.ts'], include: ['**/*.test.ts'] },
};
