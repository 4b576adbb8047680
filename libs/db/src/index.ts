export * from './schema';
export * from './client';
export { DatabaseNotAnsweringError, QUERY_TIMEOUT, QueryTimeoutError } from './query-timeouts';
export * from './error-for-log';
export * from './prepared';
export * from './migrate';
export * from './embedded';
export * from './test-database';
export * from './resolve';
