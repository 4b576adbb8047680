import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { errorBodyFor } from './error-response';

/** What postgres.js throws for a refused statement, as drizzle and then tRPC wrap it. */
function wrappedDatabaseError(sqlstate: string): TRPCError {
  const postgresError = Object.assign(new Error('refused by PostgreSQL'), { name: 'PostgresError', code: sqlstate, severity: 'ERROR' });
  const drizzleError = Object.assign(new Error('Failed query: insert into "subjects" …\nparams: …'), { cause: postgresError });
  return new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: drizzleError });
}

describe('errorBodyFor: a value PostgreSQL refused (SQLSTATE class 22) is the caller’s bad value, never a 500', () => {
  it.each([
    ['22P05', 'untranslatable character (NUL in jsonb)', 'invalid_characters'],
    ['22021', 'character not in repertoire (NUL in text)', 'invalid_characters'],
    ['22008', 'date/time field out of range', 'out_of_range'],
    ['22007', 'invalid date/time format', 'invalid_format'],
    ['22003', 'numeric value out of range', 'out_of_range'],
    ['22001', 'string too long for its column', 'too_long'],
    ['22P02', 'invalid text representation', 'invalid_format'],
    ['22012', 'any other data exception (division by zero)', 'invalid_value'],
  ])('%s (%s) answers 400 invalid_request with issue %s, and asks to be logged as a warning', (sqlstate, _label, issue) => {
    const response = errorBodyFor(wrappedDatabaseError(sqlstate), 'req_test', []);
    expect(response.status).toBe(400);
    expect(response.unexpected).toBe(false);
    expect(response.warning).toMatch(/input schemas/);
    expect(response.body.error.code).toBe('invalid_request');
    expect(response.body.error.details).toEqual([{ issue, message: expect.any(String) }]);
    // Nothing of the statement or the driver reaches the partner.
    expect(JSON.stringify(response.body)).not.toMatch(/insert|subjects|params|PostgreSQL|22/);
  });

  it('other database failures stay what they were: 500 for a bug, 503 for an outage', () => {
    expect(errorBodyFor(wrappedDatabaseError('42P01'), 'req_test', []).status).toBe(500);
    expect(errorBodyFor(wrappedDatabaseError('23505'), 'req_test', []).status).toBe(500);
    expect(errorBodyFor(wrappedDatabaseError('57P01'), 'req_test', []).status).toBe(503);
  });

  it('a dropped database connection under a write (EPIPE, which postgres.js passes on from its socket) is an outage: 503 with Retry-After', () => {
    const socketError = Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });
    const response = errorBodyFor(new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: Object.assign(new Error('Failed query: select …'), { cause: socketError }) }), 'req_test', []);
    expect(response.status).toBe(503);
    expect(response.body.error.code).toBe('unavailable');
    expect(response.headers['Retry-After']).toBe('5');
  });

  it('a non-SQLSTATE code that happens to start with 22 is not mistaken for one', () => {
    const error = new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: Object.assign(new Error('x'), { code: '22' }) });
    expect(errorBodyFor(error, 'req_test', []).status).toBe(500);
  });
});
