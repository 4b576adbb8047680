import { projectTestConfig } from '../../libs/db/src/testing/vitest-project.ts';

const shared = projectTestConfig('delivery-worker');

// Every worker takes jobs from the one delivery queue of the run's database, so files that run
// workers must not overlap: one file at a time.
export default { ...shared, test: { ...shared.test, fileParallelism: false } };
