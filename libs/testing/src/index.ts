/**
 * Test builders shared by every project's tests: tenants (laboratory, client, programs, items,
 * keys), a partner ready to order and subscribe, a webhook receiver, the partner API as a
 * process of its own, and a partner's resend after a 429. Test files and test harnesses only:
 * eslint.config.mjs refuses it to production code.
 */
export * from './api-process';
export * from './busy';
export * from './database';
export * from './partner';
export * from './receiver';
export * from './tenant';
