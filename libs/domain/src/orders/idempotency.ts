import { createHash } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { idempotencyKeys, preparedStatement, sqlOf, type Database, type Transaction } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { DEFAULT_IDEMPOTENCY_WAIT_SECONDS } from '../config/config';
import type { StreamWriteGate } from '../events/write-gate';
import { conflict, PartnerError } from '../http/errors';
import { withSpan } from '../telemetry/tracing';

/**
 * A waiter re-reads the key after 10 ms, then at doubling intervals up to 200 ms: one query per
 * read, on a pool connection held only for that query. Order creation takes tens of
 * milliseconds, so most waiters read two or three times.
 */
const FIRST_POLL_MS = 10;
const MAX_POLL_MS = 200;

/** Retry-After of a 409 idempotency_key_in_flight: the first request is usually done by then. */
const IN_FLIGHT_RETRY_AFTER_SECONDS = 1;

const inFlight = (message: string) =>
  new PartnerError('conflict', message, { details: [{ issue: 'idempotency_key_in_flight' }], headers: { 'Retry-After': String(IN_FLIGHT_RETRY_AFTER_SECONDS) } });

/** Key order and whitespace do not make two bodies different. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const keyOf = and(
  eq(idempotencyKeys.clientId, sql.placeholder('clientId')),
  eq(idempotencyKeys.environment, sql.placeholder('environment')),
  eq(idempotencyKeys.key, sql.placeholder('key')),
);
const readKey = preparedStatement((db) =>
  db
    .select({
      state: idempotencyKeys.state,
      requestHash: idempotencyKeys.requestHash,
      responseStatus: idempotencyKeys.responseStatus,
      responseData: idempotencyKeys.responseData,
    })
    .from(idempotencyKeys)
    .where(keyOf)
    .prepare('idempotency_read'),
);
// An `in_flight` row is what releases before this one left behind (a lease): no request owns it.
const completeKey = preparedStatement((db) =>
  db
    .insert(idempotencyKeys)
    .values({
      clientId: sql.placeholder('clientId'),
      environment: sql.placeholder('environment'),
      key: sql.placeholder('key'),
      requestHash: sql.placeholder('requestHash'),
      state: 'completed',
      lockedUntil: sql`now()`,
      // A placeholder in values() skips the column's JSON encoding: the value is passed as JSON text.
      responseStatus: sql`${sql.placeholder('status')}`,
      responseData: sql`${sql.placeholder('json')}::jsonb`,
    })
    .onConflictDoUpdate({
      target: [idempotencyKeys.clientId, idempotencyKeys.environment, idempotencyKeys.key],
      set: { requestHash: sql`excluded.request_hash`, state: 'completed', lockedUntil: sql`now()`, responseStatus: sql`excluded.response_status`, responseData: sql`excluded.response_data` },
      setWhere: sql`${idempotencyKeys.state} <> 'completed'`,
    })
    .prepare('idempotency_complete'),
);

type KeyValues = { clientId: string; environment: Caller['environment']; key: string };

/**
 * The key's owner is the transaction holding this advisory lock: PostgreSQL releases it when that
 * transaction ends however it ends (commit, rollback, a killed connection, a crashed server), so a
 * key is never held by a request that is gone. Two int4 keys (the stream, the key), a space of
 * its own: pg-boss's advisory locks take one bigint.
 */
async function tryOwn(tx: Transaction, k: KeyValues): Promise<boolean> {
  const [{ owned }] = await sqlOf(tx)<{ owned: boolean }[]>`
    select pg_try_advisory_xact_lock(hashtext(${k.clientId} || ':' || ${k.environment}), hashtext(${k.key})) as owned`;
  return owned;
}

/** The key's stored outcome, and whether a transaction still owns it (its advisory lock, as pg_locks shows it). */
async function peek(db: Database, k: KeyValues) {
  const [row] = await sqlOf(db)<{ state: string | null; request_hash: string | null; response_status: number | null; response_data: unknown; running: boolean }[]>`
    select k.state, k.request_hash, k.response_status, k.response_data,
           exists (select 1 from pg_locks l
                   where l.locktype = 'advisory' and l.granted and l.objsubid = 2
                     and l.database = (select oid from pg_database where datname = current_database())
                     and l.classid = (hashtext(${k.clientId} || ':' || ${k.environment})::bigint & 4294967295)::oid
                     and l.objid = (hashtext(${k.key})::bigint & 4294967295)::oid) as running
    from (select 1) as one
    left join idempotency_keys k on k.client_id = ${k.clientId} and k.environment = ${k.environment} and k.key = ${k.key}`;
  return row;
}

/**
 * Waiters in this process, by key. When an attempt here commits or frees its key, every waiter on
 * that key wakes at once instead of at its next read. Only a hint: the row in PostgreSQL decides,
 * and waiters on other replicas find the outcome by reading it.
 */
const localWaiters = new Map<string, Set<() => void>>();

/** Subscribes before the key is read, so an attempt that ends after the read cannot be missed. */
function nextLocalEnd(id: string): { ended: Promise<void>; stop(): void } {
  let waiters = localWaiters.get(id);
  if (!waiters) localWaiters.set(id, (waiters = new Set()));
  let wake!: () => void;
  const ended = new Promise<void>((resolve) => (wake = resolve));
  waiters.add(wake);
  const subscribed = waiters;
  return {
    ended,
    stop: () => {
      subscribed.delete(wake);
      if (subscribed.size === 0 && localWaiters.get(id) === subscribed) localWaiters.delete(id);
    },
  };
}

function announceLocalEnd(id: string): void {
  const waiters = localWaiters.get(id);
  localWaiters.delete(id);
  for (const wake of waiters ?? []) wake();
}

/** Resolves after `ms`, or as soon as `wake` resolves. */
function pause(ms: number, wake: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void wake.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export interface IdempotentOutcome<T> {
  status: number;
  data: T;
  replayed: boolean;
}

export interface IdempotencyOptions {
  /** Bounds the client's writes that may hold a pooled connection (events/write-gate.ts). */
  gate: StreamWriteGate;
  /** How long a request whose key is in flight waits for it; 0 answers 409 at once. */
  waitSeconds?: number;
  /** Names the span (traces) of the transaction that runs `work`, e.g. `orders.create`. */
  spanName?: string;
}

const reused = () => conflict('idempotency_key_reused', 'This Idempotency-Key was already used with a different request body.');

/**
 * Runs `work` at most once per (client, environment, Idempotency-Key) (DESIGN §6).
 *
 * - A key is owned by the one transaction that runs `work`: it takes the key's advisory lock
 *   without waiting, and stores the response in the same transaction as the work. A crash, a
 *   killed connection or a failed attempt (a 422, a 409 duplicate_external_order_id, a 5xx)
 *   leaves nothing behind: the key is free the moment the attempt ends, even when the database
 *   itself died under it (nothing to clean up afterwards on a database that just failed).
 * - The same key and body replays the stored response (`replayed`); a different body is 409
 *   `idempotency_key_reused`.
 * - While another transaction owns the key, the request waits up to `waitSeconds` for it and
 *   answers with its outcome, whatever its body; 409 `idempotency_key_in_flight` (Retry-After)
 *   only if that request is still running when the wait runs out.
 *
 * Waiting holds no database connection: the key's row and lock are re-read with backoff (one
 * query each), and a waiter in the process running the attempt is woken when it ends.
 */
export async function runIdempotently<T>(
  db: Database,
  caller: Caller,
  key: string,
  body: unknown,
  work: (tx: Transaction) => Promise<{ status: number; data: T }>,
  options: IdempotencyOptions,
): Promise<IdempotentOutcome<T>> {
  const requestHash = createHash('sha256').update(canonicalJson(body)).digest('hex');
  const keyValues: KeyValues = { clientId: caller.clientId, environment: caller.environment, key };
  const localId = JSON.stringify([caller.clientId, caller.environment, key]);
  const waitMs = 1000 * (options.waitSeconds ?? DEFAULT_IDEMPOTENCY_WAIT_SECONDS);
  const deadline = Date.now() + waitMs;
  const spanName = options.spanName ?? 'idempotent transaction';
  let pollMs = FIRST_POLL_MS;

  for (;;) {
    const outcome = await options.gate.run(caller, () => attempt(db, keyValues, requestHash, localId, work, spanName));
    if (outcome) return outcome;

    // Another request owns the key: wait for it without a connection, then try again.
    for (;;) {
      const localEnd = nextLocalEnd(localId);
      try {
        const left = deadline - Date.now();
        if (left <= 0) {
          throw inFlight(`A request with this Idempotency-Key is still being processed after ${waitMs / 1000} s; retry shortly with the same key and body.`);
        }
        await pause(Math.min(pollMs, left), localEnd.ended);
        pollMs = Math.min(2 * pollMs, MAX_POLL_MS);
        const seen = await peek(db, keyValues);
        if (seen.state === 'completed') {
          if (seen.request_hash !== requestHash) throw reused();
          return { status: seen.response_status!, data: seen.response_data as T, replayed: true };
        }
        if (!seen.running) break; // its attempt ended and created nothing: try to own the key
      } finally {
        localEnd.stop();
      }
    }
  }
}

/** One try at owning the key: its outcome, or null when another transaction owns it now. */
async function attempt<T>(
  db: Database,
  keyValues: KeyValues,
  requestHash: string,
  localId: string,
  work: (tx: Transaction) => Promise<{ status: number; data: T }>,
  spanName: string,
): Promise<IdempotentOutcome<T> | null> {
  let owned = false;
  try {
    // The span covers the whole transaction, BEGIN to COMMIT: the lock waits and the commit are where the time goes.
    return await withSpan(spanName, { attributes: { 'db.system.name': 'postgresql' } }, () =>
      db.transaction(async (tx) => {
        if (!(await tryOwn(tx, keyValues))) return null;
        owned = true;
        const [existing] = await readKey(tx).execute(keyValues);
        if (existing?.state === 'completed') {
          if (existing.requestHash !== requestHash) throw reused();
          return { status: existing.responseStatus!, data: existing.responseData as T, replayed: true };
        }
        const result = await work(tx);
        await completeKey(tx).execute({ ...keyValues, requestHash, status: result.status, json: JSON.stringify(result.data) });
        return { ...result, replayed: false };
      }),
    );
  } finally {
    if (owned) announceLocalEnd(localId);
  }
}
