import { projectTestConfig } from '../../libs/db/src/testing/vitest-project.ts';

export default projectTestConfig('domain');
