import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
export type Database = PostgresJsDatabase;
/** The executor inside `db.transaction(async (tx) => …)`. */
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];
export type Sql = postgres.Sql;

export interface DatabaseConnection {
  sql: Sql;
  db: Database;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** Pool size; API replicas keep it small because PostgreSQL connections are the scarce resource. */
  max?: number;
  applicationName?: string;
}

export function connectDatabase(url: string, options: ConnectOptions = {}): DatabaseConnection {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => undefined,
    connection: { application_name: options.applicationName ?? 'partner-service' },
    // Fail fast when the server is unreachable so callers can answer 503 instead of hanging.
    connect_timeout: 5,
    // Between reconnection attempts while the server is unreachable. postgres.js's default grows to
    // 20 s, and queries wait in its queue all that time: a brief outage became a long hang, and
    // recovery waited for the timer. Capped at 250 ms so queued queries fail fast and service resumes quickly.
    backoff: (attempt: number) => Math.min(0.02 * 2 ** attempt, 0.25),
  });
  // No relational schema: nothing uses db.query, and with one drizzle builds a query builder per
  // table for every transaction.
  const db = drizzle(sql);
  return { sql, db, close: () => sql.end({ timeout: 5 }) };
}
