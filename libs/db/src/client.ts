import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { sendNotificationsAfterCommit } from './after-commit';
import { queryDeadlines } from './query-timeouts';
export type Database = PostgresJsDatabase;

/** Drizzle's query builder without a connection: it only builds statements (see runStatement). */
export const statementBuilder: Database = drizzle.mock();

/**
 * Runs a statement built with drizzle on a postgres.js connection or transaction (one opened with
 * `sql.begin`, which drizzle cannot wrap): the table's column mapping stays drizzle's.
 */
export async function runStatement(sql: postgres.Sql, statement: { toSQL(): { sql: string; params: unknown[] } }): Promise<void> {
  const { sql: text, params } = statement.toSQL();
  await sql.unsafe(text, params as postgres.ParameterOrJSON<never>[]);
}
/** The executor inside `db.transaction(async (tx) => …)`. */
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];
export type Sql = postgres.Sql;

export interface DatabaseConnection {
  sql: Sql;
  db: Database;
  close(): Promise<void>;
}

/**
 * Bounds for a pool that serves requests (the API's). Not for migrations, loaders or the admin
 * tools, whose long statements are legitimate.
 */
export interface QueryTimeouts {
  /** Server side (statement_timeout): PostgreSQL cancels a statement running longer. */
  statementSeconds: number;
  /** Server side (idle_in_transaction_session_timeout): a transaction left idle this long is ended with its session. */
  idleInTransactionSeconds: number;
  /**
   * Client side, longer than the statement timeout: a query (or a transaction's BEGIN/COMMIT) not
   * answered this long after it was dispatched, waiting for a connection included, fails with
   * QUERY_TIMEOUT and the pool's silent connections are closed (see query-timeouts.ts). A stalled
   * server never fires its own statement_timeout.
   */
  querySeconds: number;
  /**
   * Server side (lock_timeout): a statement waiting this long for a lock another transaction holds
   * fails (55P03, answered 503 with Retry-After), so no request parks a pooled connection behind
   * another request's row lock for long.
   */
  lockSeconds?: number;
}

export interface ConnectOptions {
  /** Pool size; API replicas keep it small because PostgreSQL connections are the scarce resource. */
  max?: number;
  applicationName?: string;
  timeouts?: QueryTimeouts;
  /** How long connecting may take before the query fails (5 s by default); a read replica's pool uses less, since the primary can answer instead. */
  connectTimeoutSeconds?: number;
}

export function connectDatabase(url: string, options: ConnectOptions = {}): DatabaseConnection {
  const timeouts = options.timeouts;
  const deadlines = timeouts ? queryDeadlines(Math.round(timeouts.querySeconds * 1000)) : undefined;
  const pool = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => undefined,
    connection: {
      application_name: options.applicationName ?? 'partner-service',
      // Startup parameters, so they hold for every statement of every connection of this pool.
      ...(timeouts
        ? {
            statement_timeout: Math.round(timeouts.statementSeconds * 1000),
            idle_in_transaction_session_timeout: Math.round(timeouts.idleInTransactionSeconds * 1000),
            ...(timeouts.lockSeconds ? { lock_timeout: Math.round(timeouts.lockSeconds * 1000) } : {}),
          }
        : {}),
    },
    // Documented postgres.js option, missing from its type definitions.
    ...(deadlines ? ({ socket: deadlines.socket } as object) : {}),
    // Fail fast when the server is unreachable so callers can answer 503 instead of hanging.
    connect_timeout: options.connectTimeoutSeconds ?? 5,
    // Between reconnection attempts while the server is unreachable. postgres.js's default grows to
    // 20 s, and queries wait in its queue all that time: a brief outage became a long hang, and
    // recovery waited for the timer. Capped at 250 ms so queued queries fail fast and service resumes quickly.
    backoff: (attempt: number) => Math.min(0.02 * 2 ** attempt, 0.25),
  });
  const sql = deadlines ? deadlines.guard(pool) : pool;
  // No relational schema: nothing uses db.query, and with one drizzle builds a query builder per
  // table for every transaction.
  const db = sendNotificationsAfterCommit(drizzle(sql), sql);
  return { sql, db, close: () => pool.end({ timeout: 5 }) };
}
