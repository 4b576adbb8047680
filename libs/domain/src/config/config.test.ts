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

describe('read replicas configuration', () => {
  it('DATABASE_READ_URL takes one or more comma-separated postgres URLs; unset, there are none', () => {
    expect(loadConfig({}).DATABASE_READ_URL).toBeUndefined();
    expect(loadConfig({ DATABASE_READ_URL: 'postgres://a:5432/db, postgresql://b/db' }).DATABASE_READ_URL).toEqual(['postgres://a:5432/db', 'postgresql://b/db']);
    expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://a/db,mysql://b/db' })).toThrow(/DATABASE_READ_URL.*postgres:\/\//);
  });

  it('a replica is skipped beyond 10 s or 64 MiB of lag by default', () => {
    expect(loadConfig({})).toMatchObject({ DATABASE_READ_MAX_LAG_SECONDS: 10, DATABASE_READ_MAX_LAG_BYTES: 64 * 1024 * 1024 });
  });
});
