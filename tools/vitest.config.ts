import { projectTestConfig } from '../libs/db/src/testing/vitest-project.ts';

const shared = projectTestConfig('tools');

// Tools keep no src/ folder: each tool's tests sit beside it.
export default { ...shared, test: { ...shared.test, include: ['admin/**/*.test.ts', 'start/**/*.test.ts', 'e2e/**/*.test.ts', 'openapi/**/*.test.ts', 'postman/**/*.test.ts', 'docs/**/*.test.ts', 'examples/**/*.test.ts', 'setup/**/*.test.ts'] } };
