import { DrizzleQueryError, fillPlaceholders, is, NoopLogger } from 'drizzle-orm';
import * as drizzle from 'drizzle-orm';
import { PostgresJsPreparedQuery } from 'drizzle-orm/postgres-js';
import type { Database, Sql, Transaction } from './client';

/** Every drizzle executor: the pool's database, or a transaction of it. */
export type Executor = Database | Transaction;

/** The postgres.js client an executor runs on: the pool, or the transaction's own connection. */
export function sqlOf(executor: Executor): Sql {
  // drizzle keeps it on the session (pinned drizzle-orm 0.45); fail loudly if an upgrade moves it.
  const client = (executor._.session as unknown as { client?: Sql }).client;
  if (typeof client !== 'function') throw new Error('drizzle session without a postgres.js client: preparedStatement needs updating for this drizzle-orm version');
  return client;
}

/** A mapper drizzle exports but does not declare (pinned drizzle-orm 0.45): a result row (array mode) to the selection's shape. */
const mapResultRow = (drizzle as unknown as { mapResultRow: (fields: unknown, row: unknown[], joinsNotNullableMap: unknown) => unknown }).mapResultRow;

/** What drizzle's postgres-js prepared query holds (pinned drizzle-orm 0.45); read once per statement. */
interface PostgresJsStatement {
  queryString: string;
  params: unknown[];
  fields?: unknown;
  joinsNotNullableMap?: unknown;
  customResultMapper?: (rows: unknown[][]) => unknown;
  prepare: boolean;
  logger: unknown;
  cacheConfig?: unknown;
}

/**
 * A drizzle statement built once per process and run as a named prepared statement, on the pool
 * or inside a transaction. Building a query (drizzle walks every column and parameter) cost more
 * CPU than the database work of the hot paths, and an unnamed statement is parsed and planned by
 * PostgreSQL on every call; postgres.js keeps named ones prepared per connection.
 *
 * Each call runs the statement on the postgres.js client of the executor it is given (the pool,
 * or the transaction's own connection). Build it with placeholders (`sql.placeholder('name')`)
 * and end with `.prepare('name')`.
 *
 * Run the way drizzle's own `execute` runs it (the same statement text, parameters, driver call,
 * row mapping and "Failed query" error), without the layers a call there adds for a cache,
 * a query logger and tracing this project configures none of: four nested async functions per
 * statement, and an object made per call to rebind the statement to its executor. A statement
 * drizzle would run otherwise (a cache or logger configured) keeps drizzle's `execute`.
 */
export function preparedStatement<Statement extends { execute: (values?: Record<string, unknown>) => Promise<unknown> }>(
  build: (db: Executor) => Statement,
): (executor: Executor) => Pick<Statement, 'execute'> {
  let run: ((client: Sql, values: Record<string, unknown>) => Promise<unknown>) | undefined;
  let statement: Statement | undefined;
  return (executor) => {
    const client = sqlOf(executor);
    if (!statement) {
      statement = build(executor);
      run = direct(statement);
    }
    if (run) {
      const execute = run;
      return { execute: ((values: Record<string, unknown> = {}) => execute(client, values)) as Statement['execute'] };
    }
    // drizzle binds a prepared statement to the executor it was built on: hand it this one's connection.
    return Object.create(statement, { client: { value: client } }) as Statement;
  };
}

function direct(built: unknown): ((client: Sql, values: Record<string, unknown>) => Promise<unknown>) | undefined {
  if (!is(built, PostgresJsPreparedQuery)) return undefined;
  const statement = built as unknown as PostgresJsStatement;
  if (!is(statement.logger, NoopLogger) || statement.cacheConfig !== undefined) return undefined;
  const { queryString, fields, joinsNotNullableMap, customResultMapper, prepare } = statement;
  return async (client, values) => {
    const params = fillPlaceholders(statement.params, values);
    try {
      if (!fields && !customResultMapper) return await client.unsafe(queryString, params as never[], { prepare });
      const rows = (await client.unsafe(queryString, params as never[], { prepare }).values()) as unknown as unknown[][];
      return customResultMapper ? customResultMapper(rows) : rows.map((row) => mapResultRow(fields, row, joinsNotNullableMap));
    } catch (error) {
      throw new DrizzleQueryError(queryString, params, error as Error);
    }
  };
}
