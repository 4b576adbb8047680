import type { Database, Sql } from '@lop/db';
import type { Caller } from './auth/authenticate';

/** Per-request context shared by the REST facade and the console's tRPC endpoint. */
export interface RequestContext {
  db: Database;
  sql: Sql;
  requestId: string;
  /** Raw Authorization header; authenticated lazily by the procedure's middleware. */
  authorization?: string;
  /** Status and headers a procedure asks the transport to send (e.g. 201, Retry-After). */
  response: { status?: number; headers: Record<string, string> };
}

export interface AuthedContext extends RequestContext {
  caller: Caller;
}
