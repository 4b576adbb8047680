import { createHash } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { idempotencyKeys, preparedStatement, type Database, type Transaction } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { conflict, PartnerError } from '../http/errors';
import { withSpan } from '../telemetry/tracing';

/** How long a request may hold its key before another request may take over (a crashed process). */
const IN_FLIGHT_LEASE_SECONDS = 60;

/**
 * How long a request whose key is in flight with the same body waits for the first request, by
 * default (PARTNER_IDEMPOTENCY_WAIT_SECONDS). A healthy first attempt ends in milliseconds and a
 * stalled one is cut off by the pool's statement and query timeouts (5 s / 6 s); ten seconds
 * outlasts those and stays well below the 30 s a partner's HTTP client commonly allows.
 */
export const DEFAULT_IDEMPOTENCY_WAIT_SECONDS = 10;

/**
 * A waiter re-reads the key after 10 ms, then at doubling intervals up to 200 ms: one primary-key
 * lookup per read, on a pool connection held only for that lookup. Order creation takes tens of
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
const claimKey = preparedStatement((db) =>
  db
    .insert(idempotencyKeys)
    .values({
      clientId: sql.placeholder('clientId'),
      environment: sql.placeholder('environment'),
      key: sql.placeholder('key'),
      requestHash: sql.placeholder('requestHash'),
      state: 'in_flight',
      lockedUntil: sql`now() + make_interval(secs => ${IN_FLIGHT_LEASE_SECONDS})`,
    })
    .onConflictDoNothing()
    .returning({ key: idempotencyKeys.key })
    .prepare('idempotency_claim'),
);
// `leaseExpired` on the database's clock, the one the lease was set by.
const readKey = preparedStatement((db) =>
  db
    .select({
      state: idempotencyKeys.state,
      requestHash: idempotencyKeys.requestHash,
      responseStatus: idempotencyKeys.responseStatus,
      responseData: idempotencyKeys.responseData,
      leaseExpired: sql<boolean>`${idempotencyKeys.lockedUntil} < now()`,
    })
    .from(idempotencyKeys)
    .where(keyOf)
    .prepare('idempotency_read'),
);
const lockKey = preparedStatement((db) => db.select().from(idempotencyKeys).where(keyOf).for('update').prepare('idempotency_lock'));
// A lease left behind by a crashed process may be taken over once it has expired.
const takeOverKey = preparedStatement((db) =>
  db
    .update(idempotencyKeys)
    .set({ requestHash: sql`${sql.placeholder('requestHash')}`, lockedUntil: sql`now() + make_interval(secs => ${IN_FLIGHT_LEASE_SECONDS})` })
    .where(and(keyOf, eq(idempotencyKeys.state, 'in_flight'), sql`${idempotencyKeys.lockedUntil} < now()`))
    .returning({ key: idempotencyKeys.key })
    .prepare('idempotency_take_over'),
);
const freeKey = preparedStatement((db) =>
  db
    .delete(idempotencyKeys)
    .where(and(keyOf, eq(idempotencyKeys.state, 'in_flight'), eq(idempotencyKeys.requestHash, sql.placeholder('requestHash'))))
    .prepare('idempotency_free'),
);
const completeKey = preparedStatement((db) =>
  db
    .update(idempotencyKeys)
    // A placeholder in set() skips the column's JSON encoding: the value is passed as JSON text.
    .set({ state: 'completed', responseStatus: sql`${sql.placeholder('status')}`, responseData: sql`${sql.placeholder('json')}::jsonb` })
    .where(keyOf)
    .prepare('idempotency_complete'),
);

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
  /** How long a request with the same key and body waits for one still in flight; 0 answers 409 at once. */
  waitSeconds?: number;
  /** Names the span (traces) of the transaction that runs `work`, e.g. `orders.create`. */
  spanName?: string;
}

/**
 * Runs `work` at most once per (client, environment, Idempotency-Key) (DESIGN §6).
 *
 * - The same key and body replays the stored response (`replayed`).
 * - While the key is in flight with the same body, waits up to `waitSeconds` for that request and
 *   answers with its outcome; 409 `idempotency_key_in_flight` (Retry-After) only if the wait runs out.
 * - A different body is a 409: `idempotency_key_reused` once the key has produced its response,
 *   `idempotency_key_in_flight` at once while the first request still runs (it may yet fail).
 * - The stored response commits in the same transaction as the work, so a crash leaves either
 *   nothing or both. An attempt that fails (a 422, a 409 duplicate_external_order_id, a 5xx)
 *   created nothing and frees the key: the key is bound to a body only by the order it produced.
 *
 * Waiting holds no database connection: the key's row is re-read with backoff (one indexed
 * lookup each), and a waiter in the process running the attempt is woken when it ends. Holding
 * the row lock instead would pin one pool connection per waiter for the whole wait, and ten
 * retries of one order would take a replica's entire pool.
 */
export async function runIdempotently<T>(
  db: Database,
  caller: Caller,
  key: string,
  body: unknown,
  work: (tx: Transaction) => Promise<{ status: number; data: T }>,
  options: IdempotencyOptions = {},
): Promise<IdempotentOutcome<T>> {
  const requestHash = createHash('sha256').update(canonicalJson(body)).digest('hex');
  const keyValues = { clientId: caller.clientId, environment: caller.environment, key };
  const localId = JSON.stringify([caller.clientId, caller.environment, key]);
  const waitMs = 1000 * (options.waitSeconds ?? DEFAULT_IDEMPOTENCY_WAIT_SECONDS);
  const deadline = Date.now() + waitMs;
  const waitedTooLong = () =>
    inFlight(`A request with this Idempotency-Key is still being processed after ${waitMs / 1000} s; retry shortly with the same key and body.`);
  let pollMs = FIRST_POLL_MS;

  for (let round = 0; ; round++) {
    // Keys freed and claimed again by other requests, over and over: bounded by the wait as well.
    if (round > 0 && Date.now() >= deadline) throw waitedTooLong();
    let ours = (await claimKey(db).execute({ ...keyValues, requestHash })).length > 0;

    while (!ours) {
      const localEnd = nextLocalEnd(localId);
      try {
        const [existing] = await readKey(db).execute(keyValues);
        if (!existing) break; // freed by an attempt that created nothing: claim it again
        if (existing.state === 'completed') {
          if (existing.requestHash !== requestHash) throw conflict('idempotency_key_reused', 'This Idempotency-Key was already used with a different request body.');
          return { status: existing.responseStatus!, data: existing.responseData as T, replayed: true };
        }
        // Only a lease left behind by a crashed process may be taken over; that process created nothing.
        if (existing.leaseExpired && (await takeOverKey(db).execute({ ...keyValues, requestHash })).length > 0) {
          ours = true;
          break;
        }
        if (existing.requestHash !== requestHash) {
          throw inFlight('A request with this Idempotency-Key and a different body is still being processed; retry shortly to learn its outcome.');
        }
        const left = deadline - Date.now();
        if (left <= 0) throw waitedTooLong();
        await pause(Math.min(pollMs, left), localEnd.ended);
        pollMs = Math.min(2 * pollMs, MAX_POLL_MS);
      } finally {
        localEnd.stop();
      }
    }
    if (ours) return attempt(db, keyValues, requestHash, localId, work, options.spanName ?? 'idempotent transaction');
  }
}

async function attempt<T>(
  db: Database,
  keyValues: { clientId: string; environment: Caller['environment']; key: string },
  requestHash: string,
  localId: string,
  work: (tx: Transaction) => Promise<{ status: number; data: T }>,
  spanName: string,
): Promise<IdempotentOutcome<T>> {
  let leaseLost = false;
  try {
    // The span covers the whole transaction, BEGIN to COMMIT: the lock waits and the commit are where the time goes.
    return await withSpan(spanName, { attributes: { 'db.system.name': 'postgresql' } }, () => db.transaction(async (tx) => {
      // Still ours? A request slower than its lease may have been taken over; the row lock
      // also makes a takeover wait until this transaction ends.
      const [lease] = await lockKey(tx).execute(keyValues);
      if (!lease || lease.state !== 'in_flight' || lease.requestHash !== requestHash) {
        leaseLost = true;
        throw inFlight('A request with this Idempotency-Key is still being processed; retry shortly.');
      }
      const result = await work(tx);
      await completeKey(tx).execute({ ...keyValues, status: result.status, json: JSON.stringify(result.data) });
      return { ...result, replayed: false };
    }));
  } catch (error) {
    // Free the key for a corrected retry, unless it now belongs to another request. Only an
    // in-flight row is deleted: a commit whose acknowledgement was lost stays completed.
    if (!leaseLost) await freeKey(db).execute({ ...keyValues, requestHash });
    throw error;
  } finally {
    announceLocalEnd(localId);
  }
}
