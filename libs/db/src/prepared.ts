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

/**
 * A drizzle statement built once per process and run as a named prepared statement, on the pool
 * or inside a transaction. Building a query (drizzle walks every column and parameter) cost more
 * CPU than the database work of the hot paths, and an unnamed statement is parsed and planned by
 * PostgreSQL on every call; postgres.js keeps named ones prepared per connection.
 *
 * drizzle binds a prepared statement to the executor it was built on, so each call hands the
 * cached statement the connection of the executor it is given (the pool, or the transaction's
 * own connection). Build it with placeholders (`sql.placeholder('name')`) and end with
 * `.prepare('name')`.
 */
export function preparedStatement<Statement extends object>(build: (db: Executor) => Statement): (executor: Executor) => Statement {
  let statement: Statement | undefined;
  return (executor) => {
    statement ??= build(executor);
    return Object.create(statement, { client: { value: sqlOf(executor) } }) as Statement;
  };
}
