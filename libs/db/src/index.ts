export * from './schema';
export * from './client';
export { notifyAfterCommit } from './after-commit';
export { DatabaseNotAnsweringError, QUERY_TIMEOUT, QueryTimeoutError } from './query-timeouts';
export * from './error-for-log';
export * from './prepared';
export * from './migrate';
export * from './embedded';
export * from './test-database';
export * from './resolve';
export * from './free-port';
export * from './replica-lag';
// Time-partitioned tables: creating partitions ahead, listing them, detaching and dropping old ones.
export * from './partitions';
