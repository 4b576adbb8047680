export * from './retention';
export * from './maintenance-job';
export * from './partitioned-tables';
