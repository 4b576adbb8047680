import { sql as raw } from 'drizzle-orm';
import { pino } from 'pino';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase } from './client';
import { errorForLog, startupFailure } from './error-for-log';

const connection = connectDatabase(inject('databaseUrl'), { max: 2 });
afterAll(() => connection.close());

/** What pino's standard error serializer would write for `error`, as text. */
const logged = (error: unknown) => JSON.stringify(pino.stdSerializers.err(error as Error));

const SECRET = 'patient-Ada-Lovelace-1815';

async function failure(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected the query to fail');
}

describe('errorForLog: a failed query is logged without its statement and parameters', () => {
  it('drizzle: the message "Failed query: … params: …", the query/params fields and the value PostgreSQL quotes are withheld; the PostgreSQL message and SQLSTATE stay', async () => {
    const error = await failure(() => connection.db.execute(raw`select ${SECRET}::int as n`));
    // The fault being guarded against: the raw error carries the parameter, in fields and message.
    expect(logged(error)).toContain(SECRET);

    const safe = errorForLog(error);
    const text = logged(safe);
    expect(text).not.toContain(SECRET);
    expect(text).not.toMatch(/select .*::int|params:/);
    expect(text).toContain('invalid input syntax for type integer');
    expect(text).toContain('22P02');
    expect(text).toContain('withheld from logs');
    expect(text).toContain('[withheld]');
  });

  it('postgres.js: query, parameters, args and types are withheld even when enumerable (debug), and detail too', async () => {
    // With `debug`, postgres.js makes query, parameters, args and types enumerable: a logger would print them.
    const debugging = postgres(inject('databaseUrl'), { max: 1, debug: true, onnotice: () => undefined });
    try {
      const error = (await failure(() => debugging`select ${SECRET}::int as n`)) as Record<string, unknown>;
      error.detail = `Key (external_order_id)=(${SECRET}) already exists.`;
      expect(logged(error)).toContain(SECRET);
      const text = logged(errorForLog(error));
      expect(text).not.toContain(SECRET);
      expect(text).toContain('22P02');
    } finally {
      await debugging.end();
    }
  });

  it('a wrapper that copied the message (tRPC does) is scrubbed too, message and stack, and keeps its own fields', async () => {
    const cause = await failure(() => connection.db.execute(raw`select ${SECRET}::int as n`));
    const wrapper = Object.assign(new Error((cause as Error).message, { cause }), { code: 'INTERNAL_SERVER_ERROR' });
    const text = logged(errorForLog(wrapper));
    expect(text).not.toContain(SECRET);
    expect(text).toContain('INTERNAL_SERVER_ERROR');
    expect(text).toContain('invalid input syntax for type integer');
  });

  it('leaves other values and errors as they are', () => {
    expect(errorForLog('text')).toBe('text');
    expect(errorForLog(undefined)).toBeUndefined();
    const plain = new Error('connect ECONNREFUSED');
    expect(logged(errorForLog(plain))).toContain('connect ECONNREFUSED');
  });
});

describe('startupFailure: the one line a process prints when it cannot start', () => {
  it('a drizzle "Failed query" keeps its cause: the PostgreSQL message and SQLSTATE, never the statement or parameters', async () => {
    const error = await failure(() => connection.db.execute(raw`select ${SECRET}::int as n from nowhere_at_all`));
    // What main() printed before: error.message alone, the statement and parameters without the cause.
    expect((error as Error).message).toMatch(/^Failed query: /);
    const line = startupFailure(error);
    expect(line).toBe('Failed query (statement and parameters withheld from logs): caused by: relation "nowhere_at_all" does not exist (SQLSTATE 42P01)');
    expect(line).not.toContain(SECRET);
  });

  it('a plain error is its message; something thrown that is not an error is its text', () => {
    expect(startupFailure(new Error('PORT is in use'))).toBe('PORT is in use');
    expect(startupFailure('no')).toBe('no');
  });
});
