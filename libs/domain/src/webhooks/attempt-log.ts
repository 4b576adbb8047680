import { sqlOf, type Database, type Transaction } from '@lop/db';
import type { AttemptReport } from './delivery-attempt';
import type { DeliveryQueue, EnqueueRequest } from './delivery-queue';
import type { Decision } from './retry-policy';

/**
 * The one writer of attempt rows (webhook_delivery_attempts) and of the delivery state an attempt
 * moves. An attempt is claimed before its request leaves and completed after it:
 *
 * - claim: the delivery's `attempts_made` goes from n-1 to n and attempt n is written with outcome
 *   `sending` and a lease (`in_flight_until`, the job's expiry). Only one claim of attempt n can
 *   succeed, and no claim past the last allowed attempt: the count lives in this table, not in
 *   pg-boss's retry counter, so no job re-run can add an eighth attempt.
 * - complete: the attempt gets its verdict and the delivery its new state (and, for a retry, the
 *   next job) together.
 * - an attempt still `sending` after its lease belongs to a worker that died or lost its database
 *   mid-attempt: the next run of its job completes it as `interrupted` (the request may have
 *   reached the receiver), so the log shows every attempt a receiver may have seen. Attempt n+1
 *   is never claimed while attempt n is `sending`.
 */

export const SENDING = 'sending';

export interface AttemptClaim {
  deliveryId: string;
  /** 1-based. */
  attempt: number;
  /** The attempt's id: the x-partner-delivery-id its request carries. */
  attemptId: string;
  startedAt: Date;
  address: string | null;
  requestHeaders: Record<string, string> | null;
  requestBody: string | null;
  /** The last attempt number allowed (7 by the spec). */
  maxAttempts: number;
  /** How long the attempt may stay `sending` before another run takes it as abandoned. */
  leaseSeconds: number;
}

/** True if this run now owns attempt n; false if the delivery moved on (another run, a cancel). */
export async function claimAttempt(db: Database, claim: AttemptClaim): Promise<boolean> {
  const rows = await sqlOf(db)`
    with claimed as (
      update webhook_deliveries set attempts_made = ${claim.attempt}
      where id = ${claim.deliveryId} and state = 'pending' and attempts_made = ${claim.attempt - 1} and ${claim.attempt} <= ${claim.maxAttempts}
        -- never while the previous attempt is still in flight (a "retry now" job arriving meanwhile)
        and not exists (select 1 from webhook_delivery_attempts a where a.delivery_id = ${claim.deliveryId} and a.attempt_number = ${claim.attempt - 1} and a.outcome = ${SENDING})
      returning id)
    insert into webhook_delivery_attempts (id, delivery_id, attempt_number, started_at, outcome, destination_address, request_headers, request_body, in_flight_until)
    select ${claim.attemptId}::uuid, id, ${claim.attempt}, ${claim.startedAt.toISOString()}::timestamptz, ${SENDING}, ${claim.address},
           ${claim.requestHeaders === null ? null : JSON.stringify(claim.requestHeaders)}::jsonb, ${claim.requestBody},
           now() + make_interval(secs => ${claim.leaseSeconds})
    from claimed
    returning delivery_id`;
  return rows.length > 0;
}

export interface AttemptVerdict {
  deliveryId: string;
  attempt: number;
  /** What the attempt row says: delivered, retry, dead_lettered (a test delivery: delivered, failed). */
  outcome: string;
  /** The delivery's state after it: pending (a retry follows), delivered, dead_lettered, failed. */
  deliveryState: string;
  failureReason: string | null;
  statusCode: number | null;
  errorClass: string | null;
  durationMs: number | null;
  address: string | null;
  responseBody: Buffer | null;
  responseBodyTruncated: boolean | null;
  retryAfterSeconds: number | null;
  nextAttemptAt: Date | null;
  completedAt: Date | null;
  /** Only an attempt whose lease ran out (its worker is gone), never one still running. */
  onlyIfAbandoned?: boolean;
}

/**
 * Writes the verdict of a claimed attempt and the delivery's new state, and enqueues `next` (the
 * following attempt) with them. False when the attempt was not `sending` (already completed) or,
 * with onlyIfAbandoned, still within its lease.
 */
export async function completeAttempt(db: Database, queue: DeliveryQueue | null, verdict: AttemptVerdict, next?: EnqueueRequest): Promise<boolean> {
  const write = async (tx: Database | Transaction) => {
    // postgres.js's own template, so it runs as a prepared statement (a round trip matters at backlog rates).
    const rows = await sqlOf(tx)`
      with finished as (
        update webhook_delivery_attempts
        set outcome = ${verdict.outcome}, status_code = ${verdict.statusCode}, error_class = ${verdict.errorClass}, duration_ms = ${verdict.durationMs},
            destination_address = coalesce(${verdict.address}, destination_address), response_body = ${verdict.responseBody}, response_body_truncated = ${verdict.responseBodyTruncated},
            retry_after_seconds = ${verdict.retryAfterSeconds}, next_attempt_at = ${verdict.nextAttemptAt?.toISOString() ?? null}::timestamptz, in_flight_until = null
        where delivery_id = ${verdict.deliveryId} and attempt_number = ${verdict.attempt} and outcome = ${SENDING}
          and (${verdict.onlyIfAbandoned === true} = false or in_flight_until < now())
        returning delivery_id)
      update webhook_deliveries d
      set state = ${verdict.deliveryState}, failure_reason = ${verdict.failureReason}, next_attempt_at = ${verdict.nextAttemptAt?.toISOString() ?? null}::timestamptz,
          last_status_code = ${verdict.statusCode}, last_error_class = ${verdict.errorClass}, completed_at = ${verdict.completedAt?.toISOString() ?? null}::timestamptz
      from finished
      where d.id = finished.delivery_id and d.state = 'pending' and d.attempts_made = ${verdict.attempt}
      returning d.id`;
    // The attempt row may be completed while the delivery was cancelled meanwhile: then nothing follows.
    if (rows.length > 0 && next && queue) await queue.enqueue(tx as Transaction, [next]);
    return rows.length > 0;
  };
  if (!next) return write(db);
  return db.transaction((tx) => write(tx));
}

/** Whether attempt n of a delivery is `sending` and still within its lease (its worker may be running it). */
export async function attemptInFlight(db: Database, deliveryId: string, attempt: number): Promise<boolean> {
  const rows = await sqlOf(db)`
    select 1 from webhook_delivery_attempts
    where delivery_id = ${deliveryId} and attempt_number = ${attempt} and outcome = ${SENDING} and in_flight_until >= now()`;
  return rows.length > 0;
}

/** A delivery attempt's verdict in the shape the attempt log writes. */
export function verdictOf(deliveryId: string, attempt: number, report: AttemptReport | null, decision: Decision, now: number, onlyIfAbandoned = false): AttemptVerdict {
  const nextAttemptAt = decision.outcome === 'retry' ? new Date(now + decision.delaySeconds * 1000) : null;
  return {
    deliveryId,
    attempt,
    outcome: decision.outcome,
    deliveryState: decision.outcome === 'retry' ? 'pending' : decision.outcome,
    failureReason: decision.outcome === 'dead_lettered' ? decision.reason : null,
    statusCode: report?.statusCode ?? null,
    errorClass: decision.outcome === 'delivered' ? null : decision.errorClass,
    durationMs: report?.durationMs ?? null,
    address: report?.address ?? null,
    responseBody: report?.responseBody ?? null,
    responseBodyTruncated: report?.responseBodyTruncated ?? null,
    retryAfterSeconds: decision.outcome === 'retry' ? decision.retryAfterSeconds : null,
    nextAttemptAt,
    completedAt: decision.outcome === 'retry' ? null : new Date(now),
    onlyIfAbandoned,
  };
}
