import { projectTestConfig } from '../../vitest.shared';

export default projectTestConfig('partner-api');
