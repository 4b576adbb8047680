/**
 * The partner API's published vocabulary, stated once: what a partner's code, the sandbox console
 * and the `lop` CLI may rely on. zod only, no node: imports: the console bundles it for the browser.
 */
export * from './errors';
export * from './events';
export * from './lifecycle';
export * from './limits';
export * from './paths';
export * from './request-log';
export * from './schemas';
export * from './scopes';
export * from './versions';
export * from './webhooks';
