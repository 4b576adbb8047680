import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RETRY_AFTER_MAX_SECONDS, SPEC_RETRY_DELAYS_SECONDS } from '@lop/contract';
import { z } from 'zod';
import { DataProtector, loadOrCreateMasterKey } from '../security/protector';
import { loadKeyring } from '../security/key-rotation';
import type { Sql } from '@lop/db';

/** The repository root; the embedded database keeps its data folder below it. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * How long a request whose key is in flight waits for the request running it, by default
 * (PARTNER_IDEMPOTENCY_WAIT_SECONDS). A healthy first attempt ends in milliseconds and a stalled
 * one is cut off by the pool's statement and query timeouts (5 s / 6 s); ten seconds outlasts
 * those and stays well below the 30 s a partner's HTTP client commonly allows.
 */
export const DEFAULT_IDEMPOTENCY_WAIT_SECONDS = 10;

const booleanText = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const optionalUrl = z.url().optional();
const DEFAULT_RETRY_DELAYS = SPEC_RETRY_DELAYS_SECONDS.join(',');
// Exactly six delays: with the first attempt that makes the spec's seven attempts in total.
const retryDelaysText = z
  .string()
  .regex(/^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?){5}\s*$/, `must be six comma-separated delays in seconds, e.g. ${DEFAULT_RETRY_DELAYS}`)
  .transform((v) => v.split(',').map(Number))
  .refine((delays) => delays.every((d) => d <= 7 * 86_400), 'each delay must be at most 7 days (604800 seconds)');

const configSchema = z.object({
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  // Streaming replicas that take the reads a replica may answer (docs/operations.md § Read replicas):
  // one or more postgres:// URLs, comma-separated. Unset: every read goes to DATABASE_URL.
  DATABASE_READ_URL: z
    .string()
    .transform((v) => v.split(',').map((url) => url.trim()).filter(Boolean))
    .pipe(z.array(z.string().regex(/^postgres(ql)?:\/\//, 'each must be a postgres:// URL')).max(16))
    .optional(),
  // A replica further behind its primary than either bound is skipped until it catches up.
  DATABASE_READ_MAX_LAG_SECONDS: z.coerce.number().min(0).max(3600).default(10),
  DATABASE_READ_MAX_LAG_BYTES: z.coerce.number().int().min(0).default(64 * 1024 * 1024),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PARTNER_DATA_DIR: z.string().default(resolve(PROJECT_ROOT, '.data')),
  PARTNER_EMBEDDED_PG_PORT: z.coerce.number().int().min(1024).max(65535).default(54329),
  PARTNER_SANDBOX_BASE_URL: optionalUrl,
  PARTNER_PRODUCTION_BASE_URL: optionalUrl,
  // API and worker processes apply pending migrations before serving (npm start always does); in
  // production migrating is its own step, `npm run migrate` (docs/operations.md § Upgrading).
  PARTNER_MIGRATE_ON_START: booleanText.default(false),
  PARTNER_DB_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  // Bounds of the API's queries (libs/db/src/query-timeouts.ts): a stalled database answers 503, never a hang.
  PARTNER_DB_STATEMENT_TIMEOUT_SECONDS: z.coerce.number().min(0.1).max(600).default(5),
  PARTNER_DB_QUERY_TIMEOUT_SECONDS: z.coerce.number().min(0.2).max(900).default(6),
  PARTNER_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS: z.coerce.number().min(0.1).max(3600).default(10),
  // lock_timeout of the API's pool: a request never waits longer for a row another request holds
  // (at its stream's counter, the client's own writes: 429; anywhere else 503; both with Retry-After).
  PARTNER_DB_LOCK_TIMEOUT_SECONDS: z.coerce.number().min(0.05).max(600).default(0.5),
  // Writes of one (client, environment) that may hold a pooled connection at once, per API process (events/write-gate.ts).
  PARTNER_CLIENT_WRITE_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(4),
  // Reads of GET /v1/events held by `wait` at once, per API process (events/waiters.ts): per
  // (client, environment) — a partner needs one per consumer — and in all, each a socket and a timer
  // but no database connection. Past either, a read that would wait is 429 too_many_waiting_reads.
  PARTNER_EVENTS_WAITING_PER_CLIENT: z.coerce.number().int().min(1).max(1000).default(10),
  PARTNER_EVENTS_WAITING_MAX: z.coerce.number().int().min(1).max(100_000).default(1000),
  PARTNER_WEBHOOKS_ALLOW_LOOPBACK: booleanText.default(false),
  // Webhook delivery (spec § Delivery and retry); shorter values exist for tests and local work.
  PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS: retryDelaysText.prefault(DEFAULT_RETRY_DELAYS),
  PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: z.coerce.number().min(0.1).max(10).default(10),
  PARTNER_WEBHOOK_RETRY_AFTER_MAX_SECONDS: z.coerce.number().min(0).max(RETRY_AFTER_MAX_SECONDS).default(RETRY_AFTER_MAX_SECONDS),
  PARTNER_WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(64),
  // Attempts one API client is entitled to in flight per environment in one worker process while
  // other clients' jobs wait (more only borrowed, never the last this many slots): its backlog or
  // slow endpoints hold no more of the capacity others need than this. At most 8, as before.
  PARTNER_WEBHOOK_CLIENT_CONCURRENCY: z.coerce.number().int().min(1).max(8).default(8),
  PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS: z.coerce.number().min(0.5).max(60).default(2),
  // How often a worker looks for held deliveries (client without an active key) whose client has a key again.
  PARTNER_WEBHOOK_HELD_RECHECK_SECONDS: z.coerce.number().min(0.2).max(3600).default(30),
  // Base64 of 32 random bytes; without it, one is generated once into the data folder.
  PARTNER_ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be base64 of exactly 32 bytes (openssl rand -base64 32)')
    .optional(),
  // Re-encryption after a key rotation (security/key-rotation.ts, in the delivery worker): rows per
  // batch (one short transaction each) and a pause between batches to bound its load.
  PARTNER_KEY_ROTATION_BATCH_SIZE: z.coerce.number().int().min(1).max(10_000).default(500),
  PARTNER_KEY_ROTATION_PAUSE_MS: z.coerce.number().int().min(0).max(60_000).default(0),
  // How long a create whose Idempotency-Key is in flight with the same body waits for it (0 = answer 409 at once).
  PARTNER_IDEMPOTENCY_WAIT_SECONDS: z.coerce.number().min(0).max(30).default(DEFAULT_IDEMPOTENCY_WAIT_SECONDS),
  // Order creations allowed per (API client, environment) per minute, shared by all its keys and all replicas.
  PARTNER_CREATE_ORDER_RATE_LIMIT: z.coerce.number().int().min(1).max(100_000).default(120),
  // Webhook operations that make the service send or replay (test sends, resends, retries now,
  // recoveries, endpoint creations) per API client and environment per minute, shared by all replicas.
  PARTNER_WEBHOOK_OPERATION_RATE_LIMIT: z.coerce.number().int().min(1).max(100_000).default(30),
  // Retention (libs/domain/src/retention): the contract keeps idempotency keys at least 24 hours, so no setting may go below.
  PARTNER_IDEMPOTENCY_KEY_RETENTION_HOURS: z.coerce.number().min(24, 'must be at least 24 (idempotency keys are kept at least 24 hours)').max(8760).default(48),
  PARTNER_WEBHOOK_RETENTION_DAYS: z.coerce.number().min(1).max(3650).default(30),
  // The audit trail (docs/audit.md): months kept (default six years), dropped a whole month at a time.
  PARTNER_AUDIT_RETENTION_MONTHS: z.coerce.number().int().min(1).max(1200).default(72),
  // Records are sealed into their month's hash chain once older than this: longer than any
  // transaction that writes one may run (statement and idle-in-transaction timeouts are seconds).
  PARTNER_AUDIT_SEAL_MARGIN_SECONDS: z.coerce.number().int().min(1).max(86_400).default(600),
  // NOT FOR PRODUCTION: the API records no read in the audit trail. Only the bench's audit-off
  // measurement sets it (npm run bench -- --audit); refused with a production base URL.
  PARTNER_BENCH_UNAUDITED_READS: booleanText.default(false),
  // Internal Prometheus endpoints (GET /metrics), never on the partner port; 0 = off.
  PARTNER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  PARTNER_WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(0),
}).refine((config) => !(config.PARTNER_BENCH_UNAUDITED_READS && config.PARTNER_PRODUCTION_BASE_URL), {
  message: 'is for the bench only: refused with PARTNER_PRODUCTION_BASE_URL set (every read must be audited)',
  path: ['PARTNER_BENCH_UNAUDITED_READS'],
}).refine((config) => config.PARTNER_DB_QUERY_TIMEOUT_SECONDS > config.PARTNER_DB_STATEMENT_TIMEOUT_SECONDS, {
  // Otherwise a merely slow statement would be cut off client-side and taken for a stalled server.
  message: 'must be longer than PARTNER_DB_STATEMENT_TIMEOUT_SECONDS',
  path: ['PARTNER_DB_QUERY_TIMEOUT_SECONDS'],
});

export type Config = z.infer<typeof configSchema>;

/** The bounds of a request-serving pool (connectDatabase's `timeouts`). */
export function queryTimeoutsOf(
  config: Pick<Config, 'PARTNER_DB_STATEMENT_TIMEOUT_SECONDS' | 'PARTNER_DB_QUERY_TIMEOUT_SECONDS' | 'PARTNER_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS' | 'PARTNER_DB_LOCK_TIMEOUT_SECONDS'>,
) {
  return {
    statementSeconds: config.PARTNER_DB_STATEMENT_TIMEOUT_SECONDS,
    querySeconds: config.PARTNER_DB_QUERY_TIMEOUT_SECONDS,
    idleInTransactionSeconds: config.PARTNER_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS,
    lockSeconds: config.PARTNER_DB_LOCK_TIMEOUT_SECONDS,
  };
}

/** The data protector for this configuration (the embedded default keeps its key in the data folder). */
export function protectorFor(config: Pick<Config, 'PARTNER_ENCRYPTION_KEY' | 'PARTNER_DATA_DIR'>): DataProtector {
  return new DataProtector(loadOrCreateMasterKey(config.PARTNER_ENCRYPTION_KEY, resolve(config.PARTNER_DATA_DIR, 'encryption.key')));
}

/** A protector for a one-off command (admin CLI): the configured master key with the keyring as it is now. */
export async function protectorWithKeyring(config: Pick<Config, 'PARTNER_ENCRYPTION_KEY' | 'PARTNER_DATA_DIR'>, sql: Sql): Promise<DataProtector> {
  const protector = protectorFor(config);
  await loadKeyring(sql, protector);
  return protector;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads configuration from the environment; a bad value is one clear line, and the process stops. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`invalid configuration: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}
