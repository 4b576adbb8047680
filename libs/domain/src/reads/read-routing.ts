import type { Caller } from '../auth/authenticate';
import { PartnerError } from '../http/errors';
import type { ReadRoute, Replica, ReplicaSet } from './replica-set';

// The replica itself is gone or refuses connections: no more reads until the monitor sees it answer.
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'QUERY_TIMEOUT', '57P01', '57P02', '57P03', '53300']);
// This read failed on the replica but the replica serves others: "canceling statement due to
// conflict with recovery" (40001, 40P01; 57P04 when its database was dropped), a statement
// timeout, a write attempted on a standby (25006: a procedure marked replica-safe that writes), or a
// table or column a migration just added that the replica has not replayed yet (42P01, 42703).
const READ_FAILED = new Set(['40001', '40P01', '57P04', '57014', '25006', '42P01', '42703']);

/** The SQLSTATE or driver code of a failure, looked for through its causes (the domain wraps driver errors). */
function codeOf(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNREACHABLE.has(code) || READ_FAILED.has(code) || code.startsWith('08'))) return code;
  }
  return undefined;
}

const isNotFound = (error: unknown) => error instanceof PartnerError && error.errorCode === 'not_found';

/**
 * Has the replica replayed the caller's stream as far as the primary showed it when the key was
 * checked (Caller.readPosition)? Every write a partner can read back — its creates and cancels,
 * a simulation, a laboratory's accession, exception or result — appends to that stream in the
 * transaction that makes it, so a replica showing the stream's counter at least that far shows
 * the write too; the read's own statements run after this one and see no less (replay only moves
 * forward). One primary-key lookup on the replica, none on the primary.
 */
async function hasReplayed(replica: Replica, caller: Caller): Promise<boolean> {
  const [row] = await replica.sql<{ last_sequence: string }[]>`
    select last_sequence from event_streams where client_id = ${caller.clientId} and environment = ${caller.environment}`;
  return Number(row?.last_sequence ?? 0) >= caller.readPosition!;
}

/** What the rule needs of the replica set: the replicas offered now, and where to report. */
export type ReplicaChooser = Pick<ReplicaSet, 'candidates' | 'markDown' | 'count'>;

/**
 * Runs a replica-safe read: on a replica that is up, within the lag bounds and has replayed the
 * caller's stream (read-your-writes), otherwise on the primary; a read the replica fails (an error
 * in `failureOf(result)`) or answers 404 is run again on the primary, so a replica never fails a
 * request nor hides a row the primary has. `run(undefined)` reads from the primary.
 */
export async function readThroughReplicas<R>(
  replicas: ReplicaChooser,
  caller: Caller,
  run: (replica: Replica | undefined) => Promise<R>,
  failureOf: (result: R) => unknown,
): Promise<R> {
  const onPrimary = (route: ReadRoute) => {
    replicas.count(route);
    return run(undefined);
  };
  // A caller authenticated without its position (none known) reads from the primary.
  if (caller.readPosition === undefined) return onPrimary('primary_behind_client');
  const candidates = replicas.candidates();
  if (candidates.length === 0) return onPrimary('primary_no_replica');
  let chosen: Replica | undefined;
  for (const replica of candidates) {
    try {
      if (await hasReplayed(replica, caller)) {
        chosen = replica;
        break;
      }
    } catch (error) {
      if (UNREACHABLE.has(codeOf(error) ?? '') || codeOf(error)?.startsWith('08')) replicas.markDown(replica, error);
    }
  }
  if (!chosen) return onPrimary('primary_behind_client');

  const result = await run(chosen);
  const failure = failureOf(result);
  if (failure === undefined) {
    replicas.count('replica');
    return result;
  }
  if (isNotFound(failure)) return onPrimary('primary_after_not_found');
  const code = codeOf(failure);
  if (code === undefined) return result;
  if (UNREACHABLE.has(code) || code.startsWith('08')) replicas.markDown(chosen, failure);
  return onPrimary('primary_after_replica_error');
}
