import type { Database, Sql } from '@lop/db';
import type { IncomingHttpHeaders } from 'node:http';
import type { Caller } from './auth/authenticate';
import type { ReadAuditWriter } from './audit/read-audit';
import type { EventWaiters } from './events/waiters';
import type { StreamWriteGate } from './events/write-gate';
import type { DataProtector } from './security/protector';
import type { ReplicaSet } from './reads/replica-set';
import type { DestinationPolicy } from './webhooks/destination-guard';

/** Budgets a procedure can spend from; each is counted per (API client, environment), shared by all its keys. */
export type RateLimitPolicy = 'create_order' | 'webhook_operations';

/** Per-request context shared by the REST facade and the console's tRPC endpoint. */
export interface RequestContext {
  /** Which door the call came through: partner REST, or the sandbox console's tRPC endpoint (sandbox keys only). */
  door: 'rest' | 'console';
  /**
   * The primary. A procedure whose meta says `reads: 'replica'` is handed a replica's instead when
   * one may answer it (trpc.ts); every other procedure, and the guard, always use the primary.
   */
  db: Database;
  sql: Sql;
  /**
   * The primary's, set by the read routing when `db` is a replica's: a read that must see a commit
   * it was just told of (a woken GET /v1/events wait) reads there.
   */
  primary?: Database;
  /** The read replicas (DATABASE_READ_URL); none: every read goes to the primary. */
  replicas?: ReplicaSet;
  requestId: string;
  /** Raw Authorization header; authenticated lazily by the procedure's middleware. */
  authorization?: string;
  /** Request headers, for the few procedures that read one (Idempotency-Key). */
  headers: IncomingHttpHeaders;
  /**
   * Where audited reads are recorded (docs/audit.md): on the primary, and the answer waits for it.
   * One per API process, shared by both doors.
   */
  audit: ReadAuditWriter;
  /** Encrypts personal data at rest and authenticates event cursors. */
  protector: DataProtector;
  /**
   * Spends one unit of `policy`'s budget for `subject` (`<client id>:<environment>`), or throws PartnerError
   * `rate_limited`. The transport provides it (it owns the RateLimit-* headers); the core decides when.
   */
  spendRateLimit(policy: RateLimitPolicy, subject: string): Promise<void>;
  /**
   * How long an order creation whose Idempotency-Key is in flight with the same body waits for
   * it (PARTNER_IDEMPOTENCY_WAIT_SECONDS); the domain's default when absent.
   */
  idempotencyWaitSeconds?: number;
  /**
   * This process's limit on each (client, environment)'s concurrent writes (events/write-gate.ts):
   * one per API process, shared by both doors.
   */
  writeGate: StreamWriteGate;
  /**
   * This process's reads of GET /v1/events waiting for their stream's next event (`wait`), woken by
   * its LISTEN connection (events/waiters.ts); none: such a read answers at once.
   */
  eventWaiters?: EventWaiters;
  /**
   * A signal aborted when the client goes away before its answer (a waiting read gives its place
   * back); a function, so that only the reads that wait pay for it.
   */
  clientGone?: () => AbortSignal;
  /**
   * The webhook settings the console's webhook self-service applies: the destination policy
   * registration and every attempt share, and the attempt timeout of a test delivery.
   */
  webhooks?: { destination: DestinationPolicy; attemptTimeoutMs: number };
  /**
   * Who the guard found the caller to be, filled in as soon as the key is authenticated (before the
   * scope and the rate limit are checked), so the transport can record the request after its
   * response (the sandbox request log). A holder, not a field: tRPC hands middlewares a copy of the context.
   */
  identified: { caller?: Caller };
  /**
   * Status and headers a procedure asks the transport to send (e.g. 201, Retry-After), and an
   * indent for a body asked for indented (FHIR's `_pretty=true`).
   */
  response: { status?: number; headers: Record<string, string>; indent?: number };
}
