import { projectTestConfig } from '../../vitest.shared';

export default projectTestConfig('delivery-worker');
