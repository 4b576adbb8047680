export * from './schema';
export * from './client';
export * from './error-for-log';
export * from './prepared';
export * from './migrate';
export * from './embedded';
export * from './test-database';
export * from './resolve';
