/**
 * Test builders shared by every project's tests: tenants (laboratory, client, programs, items,
 * keys), a partner ready to order and subscribe, and a webhook receiver. Test files and test
 * harnesses only: eslint.config.mjs refuses it to production code.
 */
export * from './database';
export * from './partner';
export * from './receiver';
export * from './tenant';
