import { projectTestConfig } from '../../vitest.shared';

export default projectTestConfig('db');
