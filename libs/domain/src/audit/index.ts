export * from './record';
export * from './read-audit';
export * from './chain';
export * from './query';
export * from './maintenance';
export * from './operator-scope';
