import type { Database, Sql } from '@lop/db';
import type { IncomingHttpHeaders } from 'node:http';
import type { Caller } from './auth/authenticate';
import type { DataProtector } from './security/protector';

/** Per-request context shared by the REST facade and the console's tRPC endpoint. */
export interface RequestContext {
  db: Database;
  sql: Sql;
  requestId: string;
  /** Raw Authorization header; authenticated lazily by the procedure's middleware. */
  authorization?: string;
  /** Request headers, for the few procedures that read one (Idempotency-Key). */
  headers: IncomingHttpHeaders;
  /** Encrypts personal data at rest and signs short-lived report paths. */
  protector: DataProtector;
  /** Status and headers a procedure asks the transport to send (e.g. 201, Retry-After). */
  response: { status?: number; headers: Record<string, string> };
}

export interface AuthedContext extends RequestContext {
  caller: Caller;
}
