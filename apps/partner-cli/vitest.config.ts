import { projectTestConfig } from '../../libs/db/src/testing/vitest-project.ts';

const shared = projectTestConfig('partner-cli');

// The files share the demo client's event stream and each starts its own API process: one file
// at a time, so a listener sees only the events its own test caused.
export default { ...shared, test: { ...shared.test, fileParallelism: false } };
