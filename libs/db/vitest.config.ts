import { projectTestConfig } from './src/testing/vitest-project.ts';

export default projectTestConfig('db');
