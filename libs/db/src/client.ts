import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from './schema';

export type Database = PostgresJsDatabase<typeof schema>;
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
  });
  const db = drizzle(sql, { schema });
  return { sql, db, close: () => sql.end({ timeout: 5 }) };
}
