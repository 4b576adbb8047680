export { createApp } from './app';
export { startPartnerApi, createLogger, type RunningApi } from './main';
export { GUIDES } from './http/guides';
