export * from './allow-list';
export * from './record';
export * from './writer';
export * from './request-log';
export * from './request-log.schemas';
