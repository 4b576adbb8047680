import { describe, expect, it } from 'vitest';
import { loadConfig, queryTimeoutsOf } from './config';

describe('database timeouts configuration', () => {
  it('defaults: 5 s statements, 6 s for an answer, 10 s idle in a transaction', () => {
    expect(queryTimeoutsOf(loadConfig({}))).toEqual({ statementSeconds: 5, querySeconds: 6, idleInTransactionSeconds: 10, lockSeconds: 0.5 });
  });

  it('refuses a client-side timeout not longer than the statement timeout, naming the variable', () => {
    expect(() => loadConfig({ PARTNER_DB_STATEMENT_TIMEOUT_SECONDS: '5', PARTNER_DB_QUERY_TIMEOUT_SECONDS: '5' })).toThrow(/PARTNER_DB_QUERY_TIMEOUT_SECONDS: must be longer than PARTNER_DB_STATEMENT_TIMEOUT_SECONDS/);
    expect(queryTimeoutsOf(loadConfig({ PARTNER_DB_STATEMENT_TIMEOUT_SECONDS: '1', PARTNER_DB_QUERY_TIMEOUT_SECONDS: '1.5' })).querySeconds).toBe(1.5);
  });
});
