export * from './retention';
export * from './maintenance-job';
