export * from './common';
export * from './laboratories';
export * from './clients';
export * from './programs';
export * from './locations';
export * from './subjects';
export * from './orders';
export * from './webhooks';
