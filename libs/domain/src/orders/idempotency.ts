import { createHash } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { idempotencyKeys, preparedStatement, type Database, type Transaction } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { conflict } from '../http/errors';

/** How long a request may hold its key before another request may take over (a crashed process). */
const IN_FLIGHT_LEASE_SECONDS = 60;

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
const readKey = preparedStatement((db) => db.select().from(idempotencyKeys).where(keyOf).prepare('idempotency_read'));
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

export interface IdempotentOutcome<T> {
  status: number;
  data: T;
  replayed: boolean;
}

/**
 * Runs `work` at most once per (client, environment, Idempotency-Key) (DESIGN §6). The same key
 * and body replays the stored response; a different body, or the same key while the first
 * request still runs, is a 409. The stored response commits in the same transaction as the work,
 * so a crash leaves either nothing or both. A failed attempt frees the key.
 */
export async function runIdempotently<T>(
  db: Database,
  caller: Caller,
  key: string,
  body: unknown,
  work: (tx: Transaction) => Promise<{ status: number; data: T }>,
): Promise<IdempotentOutcome<T>> {
  const requestHash = createHash('sha256').update(canonicalJson(body)).digest('hex');
  const keyValues = { clientId: caller.clientId, environment: caller.environment, key };

  for (let attempt = 0; attempt < 3; attempt++) {
    const claimed = await claimKey(db).execute({ ...keyValues, requestHash });

    if (claimed.length === 0) {
      const [existing] = await readKey(db).execute(keyValues);
      if (!existing) continue; // freed by a failed attempt in between: try to claim again
      if (existing.state === 'completed') {
        if (existing.requestHash !== requestHash) throw conflict('idempotency_key_reused', 'This Idempotency-Key was already used with a different request body.');
        return { status: existing.responseStatus!, data: existing.responseData as T, replayed: true };
      }
      // In flight: only a lease left behind by a crashed process may be taken over.
      const takenOver = await takeOverKey(db).execute({ ...keyValues, requestHash });
      if (takenOver.length === 0) throw conflict('idempotency_key_in_flight', 'A request with this Idempotency-Key is still being processed; retry shortly.');
    }

    let leaseLost = false;
    try {
      return await db.transaction(async (tx) => {
        // Still ours? A request slower than its lease may have been taken over; the row lock
        // also makes a takeover wait until this transaction ends.
        const [lease] = await lockKey(tx).execute(keyValues);
        if (!lease || lease.state !== 'in_flight' || lease.requestHash !== requestHash) {
          leaseLost = true;
          throw conflict('idempotency_key_in_flight', 'A request with this Idempotency-Key is still being processed; retry shortly.');
        }
        const result = await work(tx);
        await completeKey(tx).execute({ ...keyValues, status: result.status, json: JSON.stringify(result.data) });
        return { ...result, replayed: false };
      });
    } catch (error) {
      // Free the key for a corrected retry, unless it now belongs to another request.
      if (!leaseLost) await freeKey(db).execute({ ...keyValues, requestHash });
      throw error;
    }
  }
  throw conflict('idempotency_key_in_flight', 'A request with this Idempotency-Key is still being processed; retry shortly.');
}
