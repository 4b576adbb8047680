export * from './schema';
export * from './client';
export * from './migrate';
export * from './embedded';
export * from './test-database';
export * from './resolve';
