export * from './sandbox.schemas';
export * from './scenario-definitions';
export * from './scenarios';
export * from './step-operations';
export * from './simulate';
export * from './fixtures';
export * from './synthetic-results';
