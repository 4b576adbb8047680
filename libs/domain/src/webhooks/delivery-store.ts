import { and, asc, desc, eq, getTableColumns, inArray, sql } from 'drizzle-orm';
import {
  detachPartition,
  events,
  listPartitions,
  preparedStatement,
  sqlOf,
  WEBHOOK_ATTEMPT_OUTCOMES,
  WEBHOOK_DELIVERY_STATES,
  webhookDeliveries,
  webhookDeliveryAttempts,
  webhookSubscriptions,
  type Database,
  type Sql,
  type Transaction,
  type WebhookAttemptOutcome,
  type WebhookDeliveryState,
} from '@lop/db';
import type { Tenant } from '../auth/authenticate';
import { grantsOf } from '../programs/programs';
import type { OutboxEvent, Stream } from '../events/append';
import type { AttemptReport } from './delivery-attempt';
import type { DeliveryQueue, EnqueueRequest } from './delivery-queue';
import type { Decision } from './retry-policy';

/**
 * The one owner of webhook_deliveries and webhook_delivery_attempts (pg-boss's plans.ts): every
 * query on those tables is here, and every other module (the outbox, the worker, the control
 * plane, the console, retention, metrics) calls these functions. The states a row can be in are
 * the frozen tables WEBHOOK_DELIVERY_STATES and WEBHOOK_ATTEMPT_OUTCOMES (libs/db), which also
 * make the database enums.
 *
 * It is also the one writer of attempt rows and of the delivery state an attempt moves. An
 * attempt is claimed before its request leaves and completed after it:
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

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type AttemptRow = typeof webhookDeliveryAttempts.$inferSelect;

// In SQL text the states stay literals, as the partial indexes' predicates are written, so the
// planner can match them; the database enum refuses a misspelt one when the statement is parsed.
const { pending: PENDING, deadLettered: DEAD_LETTERED, cancelled: CANCELLED } = WEBHOOK_DELIVERY_STATES;

export const SENDING = WEBHOOK_ATTEMPT_OUTCOMES.sending;

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
  outcome: Exclude<WebhookAttemptOutcome, typeof SENDING>;
  /** The delivery's state after it: pending (a retry follows), delivered, dead_lettered, failed. */
  deliveryState: WebhookDeliveryState;
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

/**
 * claimAttempt for many attempts in one statement (one commit): the worker's batching recorder
 * (attempt-recorder.ts) gathers the claims of attempts about to send. The same conditions per
 * row; each claim succeeds or fails on its own. Returns, per claim in order, whether it is now
 * owned. At most one claim per delivery in a call (the caller defers a second one).
 *
 * The rows are also named by an id array (`= any(ids)`), so they are found through their keys
 * whatever the statistics say: the planner cannot count a jsonb input, and statistics taken before
 * a backlog arrived made it scan every pending delivery, or every attempt, once per call (4.8 and
 * 2.8 ms a call in a drain of 10,000; about 1.3 ms for 13 rows by key). completeAttempts does the same.
 */
export async function claimAttempts(db: Database, claims: AttemptClaim[]): Promise<boolean[]> {
  if (claims.length === 0) return [];
  if (new Set(claims.map((c) => c.deliveryId)).size !== claims.length) throw new Error('claimAttempts: one claim per delivery per call');
  const input = JSON.stringify(
    claims.map((c) => ({
      delivery_id: c.deliveryId,
      attempt: c.attempt,
      attempt_id: c.attemptId,
      started_at: c.startedAt.toISOString(),
      address: c.address,
      request_headers: c.requestHeaders,
      request_body: c.requestBody,
      max_attempts: c.maxAttempts,
      lease_seconds: c.leaseSeconds,
    })),
  );
  const ids = claims.map((c) => c.deliveryId);
  const rows = await sqlOf(db)<{ delivery_id: string }[]>`
    with input as (
      select * from jsonb_to_recordset(${input}::jsonb) as i(delivery_id uuid, attempt int, attempt_id uuid, started_at timestamptz, address text,
        request_headers jsonb, request_body text, max_attempts int, lease_seconds float8)),
    claimed as (
      update webhook_deliveries d set attempts_made = i.attempt
      from input i
      where d.id = any(${ids}::uuid[]) and d.id = i.delivery_id and d.state = 'pending' and d.attempts_made = i.attempt - 1 and i.attempt <= i.max_attempts
        -- never while the previous attempt is still in flight (a "retry now" job arriving meanwhile)
        and not exists (select 1 from webhook_delivery_attempts a where a.delivery_id = i.delivery_id and a.attempt_number = i.attempt - 1 and a.outcome = ${SENDING})
      returning d.id)
    insert into webhook_delivery_attempts (id, delivery_id, attempt_number, started_at, outcome, destination_address, request_headers, request_body, in_flight_until)
    select i.attempt_id, i.delivery_id, i.attempt, i.started_at, ${SENDING}, i.address, i.request_headers, i.request_body, now() + make_interval(secs => i.lease_seconds)
    from claimed c join input i on i.delivery_id = c.id
    returning delivery_id`;
  const owned = new Set(rows.map((row) => row.delivery_id));
  return claims.map((c) => owned.has(c.deliveryId));
}

export interface AttemptCompletion {
  verdict: AttemptVerdict;
  /** The following attempt's job, enqueued in the same transaction if the verdict lands. */
  next?: EnqueueRequest;
}

/**
 * completeAttempt for many attempts in one statement, and one commit (a transaction only when
 * some of them enqueue a next attempt). The same conditions per row; returns, per completion in
 * order, whether it landed. At most one completion per delivery in a call.
 */
export async function completeAttempts(db: Database, queue: DeliveryQueue | null, completions: AttemptCompletion[]): Promise<boolean[]> {
  if (completions.length === 0) return [];
  if (new Set(completions.map((c) => c.verdict.deliveryId)).size !== completions.length) throw new Error('completeAttempts: one completion per delivery per call');
  const input = JSON.stringify(
    completions.map(({ verdict: v }) => ({
      delivery_id: v.deliveryId,
      attempt: v.attempt,
      outcome: v.outcome,
      delivery_state: v.deliveryState,
      failure_reason: v.failureReason,
      status_code: v.statusCode,
      error_class: v.errorClass,
      duration_ms: v.durationMs,
      address: v.address,
      response_body: v.responseBody?.toString('base64') ?? null,
      response_body_truncated: v.responseBodyTruncated,
      retry_after_seconds: v.retryAfterSeconds,
      next_attempt_at: v.nextAttemptAt?.toISOString() ?? null,
      completed_at: v.completedAt?.toISOString() ?? null,
      only_if_abandoned: v.onlyIfAbandoned === true,
    })),
  );
  const ids = completions.map((c) => c.verdict.deliveryId);
  const write = async (tx: Database | Transaction) => {
    const rows = await sqlOf(tx)<{ id: string }[]>`
      with input as (
        select * from jsonb_to_recordset(${input}::jsonb) as i(delivery_id uuid, attempt int, outcome webhook_attempt_outcome, delivery_state webhook_delivery_state,
          failure_reason text, status_code int, error_class text, duration_ms int, address text, response_body text, response_body_truncated boolean,
          retry_after_seconds real, next_attempt_at timestamptz, completed_at timestamptz, only_if_abandoned boolean)),
      finished as (
        update webhook_delivery_attempts a
        set outcome = i.outcome, status_code = i.status_code, error_class = i.error_class, duration_ms = i.duration_ms,
            destination_address = coalesce(i.address, a.destination_address), response_body = decode(i.response_body, 'base64'),
            response_body_truncated = i.response_body_truncated, retry_after_seconds = i.retry_after_seconds, next_attempt_at = i.next_attempt_at, in_flight_until = null
        from input i
        where a.delivery_id = any(${ids}::uuid[]) and a.delivery_id = i.delivery_id and a.attempt_number = i.attempt and a.outcome = ${SENDING}
          and (i.only_if_abandoned = false or a.in_flight_until < now())
        returning a.delivery_id)
      update webhook_deliveries d
      set state = i.delivery_state, failure_reason = i.failure_reason, next_attempt_at = i.next_attempt_at,
          last_status_code = i.status_code, last_error_class = i.error_class, completed_at = i.completed_at
      from finished f join input i on i.delivery_id = f.delivery_id
      where d.id = any(${ids}::uuid[]) and d.id = f.delivery_id and d.state = 'pending' and d.attempts_made = i.attempt
      returning d.id`;
    const landed = new Set(rows.map((row) => row.id));
    // An attempt row may be completed while its delivery was cancelled meanwhile: then nothing follows.
    const next = completions.flatMap((c) => (c.next && landed.has(c.verdict.deliveryId) ? [c.next] : []));
    if (next.length > 0 && queue) await queue.enqueue(tx as Transaction, next);
    return completions.map((c) => landed.has(c.verdict.deliveryId));
  };
  if (!queue || completions.every((c) => !c.next)) return write(db);
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
    deliveryState: decision.outcome === 'retry' ? PENDING : decision.outcome,
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

// ---- Creating deliveries -------------------------------------------------------------------

/**
 * The outbox's insert: one pending delivery per (appended event, matching active subscription of
 * the stream), in the transaction that writes the events. Returns the new ids, in event order.
 */
export async function insertEventDeliveries(tx: Transaction, stream: Stream, events: OutboxEvent[], traceparent: string | null): Promise<string[]> {
  const given = JSON.stringify(events.map((e, position) => ({ id: e.event_id, type: e.type, position })));
  const rows = await sqlOf(tx)<{ id: string }[]>`
    insert into webhook_deliveries (subscription_id, event_id, kind, state, next_attempt_at, traceparent)
    select s.id, e.id, 'event', 'pending', now(), ${traceparent}::text
    from jsonb_to_recordset(${given}::jsonb) as e(id uuid, type text, position int)
    join webhook_subscriptions s on e.type = any(s.event_types)
    where s.client_id = ${stream.clientId} and s.environment = ${stream.environment} and s.status = 'active'
    order by e.position, s.id
    returning id`;
  return rows.map((row) => row.id);
}

/** The foreign key from a delivery to its event (0002), made deferrable by 0015, dropped by 0016 (events is partitioned). */
const EVENT_CHECK = 'webhook_deliveries_event_id_events_id_fk';

/**
 * Defers, to this transaction's commit, the check that each delivery's event exists, so the outbox
 * can be written before the events are numbered (events/append.ts). False, changing nothing, on a
 * schema older than 0015, whose check cannot be deferred: this release also serves that schema.
 * True on a schema without the check (0016 on): there is nothing to wait for, and no more than
 * one constraint of that name is asked for (a partitioned table clones its keys into every
 * partition under the parent's name). One round trip, asked of the schema every time (a process
 * may outlive the migration).
 */
export async function deferEventCheck(tx: Transaction): Promise<boolean> {
  const [, [row]] = await sqlOf(tx).unsafe<[unknown, { deferred: boolean }[]]>(`
    do $$ begin
      if exists (select from pg_constraint where conname = '${EVENT_CHECK}' and condeferrable) then
        set constraints "${EVENT_CHECK}" deferred;
      end if;
    end $$;
    select not exists (select from pg_constraint where conname = '${EVENT_CHECK}' and not condeferrable) as deferred`);
  return row.deferred;
}

/** A control-plane or console test delivery: pending until its one attempt completes it. */
export async function insertTestDelivery(db: Database, subscriptionId: string): Promise<DeliveryRow> {
  const [delivery] = await db.insert(webhookDeliveries).values({ subscriptionId, kind: 'test', state: PENDING }).returning();
  return delivery;
}

/** A replay of `original`: a new pending delivery of the same event, linked back by replay_of. */
export async function insertReplay(tx: Transaction, original: DeliveryRow & { eventId: string }, requestedBy: string, traceparent: string | null): Promise<string> {
  const [replay] = await tx
    .insert(webhookDeliveries)
    .values({ subscriptionId: original.subscriptionId, eventId: original.eventId, kind: 'replay', replayOf: original.id, requestedBy, state: PENDING, nextAttemptAt: new Date(), traceparent })
    .returning({ id: webhookDeliveries.id });
  return replay.id;
}

/**
 * A resend's half of what recover does: the event's dead letters on the endpoint not yet recovered
 * are marked recovered by the replay just inserted (recoveriesOf finds it by this time), so the
 * dead-letter count and recover leave them. Returns how many.
 */
export async function markRecovered(tx: Transaction, subscriptionId: string, eventId: string): Promise<number> {
  const rows = await sqlOf(tx)`
    update webhook_deliveries set recovered_at = now()
    where subscription_id = ${subscriptionId} and event_id = ${eventId} and state = 'dead_lettered' and recovered_at is null
    returning id`;
  return rows.length;
}

/**
 * Every replay of an endpoint (resend, recover) runs under this transaction-scoped advisory lock,
 * taken with try: a concurrent one is refused at once instead of holding a pooled connection
 * while it waits. False when another holds it.
 */
export async function tryLockEndpointReplays(tx: Transaction, subscriptionId: string): Promise<boolean> {
  const [{ locked }] = await sqlOf(tx)<{ locked: boolean }[]>`
    select pg_try_advisory_xact_lock(hashtext('webhook_recover'), hashtext(${subscriptionId})) as locked`;
  return locked;
}

/** A delivery of the event to the endpoint that is still pending, if any. */
export async function pendingDeliveryOfEvent(tx: Transaction, subscriptionId: string, eventId: string): Promise<string | null> {
  const [pending] = await tx
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.subscriptionId, subscriptionId), eq(webhookDeliveries.eventId, eventId), eq(webhookDeliveries.state, PENDING)))
    .limit(1);
  return pending?.id ?? null;
}

/**
 * recover's statement (deliveries.ts recoverDeadLetters says what it means): under the caller's
 * endpoint lock, marks the chosen dead letters recovered and inserts one replay per event; an event
 * recovered less than `settleSeconds` ago is left (`settling`), even if its replay died already.
 */
export async function insertRecoveryReplays(
  tx: Transaction,
  input: { subscriptionId: string; since: Date; requestedBy: string; limit: number; settleSeconds: number; traceparent: string | null },
): Promise<{ candidates: number; settling: number; replayIds: string[] }> {
  const since = input.since.toISOString();
  const [row] = await sqlOf(tx)<{ candidates: number; settling: number; replay_ids: string[] }[]>`
    with unrecovered as (
      select d.event_id, (array_agg(d.id order by d.created_at desc, d.id desc))[1] as latest, min(d.created_at) as first_at,
             exists (select 1 from webhook_deliveries r where r.subscription_id = ${input.subscriptionId} and r.event_id = d.event_id
                     and r.recovered_at > now() - make_interval(secs => ${input.settleSeconds})) as settling
      from webhook_deliveries d
      where d.subscription_id = ${input.subscriptionId} and d.state = 'dead_lettered' and d.event_id is not null
        and d.recovered_at is null and d.created_at >= ${since}::timestamptz
        and not exists (select 1 from webhook_deliveries p where p.subscription_id = d.subscription_id and p.event_id = d.event_id and p.state in ('pending', 'delivered'))
      group by d.event_id),
    candidates as (select * from unrecovered where not settling),
    chosen as (select * from candidates order by first_at, event_id limit ${input.limit}),
    marked as (
      update webhook_deliveries d set recovered_at = now()
      from chosen c
      where d.subscription_id = ${input.subscriptionId} and d.event_id = c.event_id and d.state = 'dead_lettered'
        and d.recovered_at is null and d.created_at >= ${since}::timestamptz
      returning d.id),
    replays as (
      insert into webhook_deliveries (subscription_id, event_id, kind, replay_of, requested_by, state, next_attempt_at, traceparent)
      select ${input.subscriptionId}, c.event_id, 'replay', c.latest, ${input.requestedBy}, 'pending', now(), ${input.traceparent}::text
      from chosen c
      order by c.first_at, c.event_id
      returning id)
    select (select count(*) from candidates)::int as candidates,
           (select count(*) from unrecovered where settling)::int as settling,
           (select count(*) from marked)::int as marked,
           coalesce((select array_agg(id) from replays), '{}') as replay_ids`;
  return { candidates: row.candidates, settling: row.settling, replayIds: row.replay_ids };
}

// ---- Moving deliveries ---------------------------------------------------------------------

/**
 * Cancels pending deliveries (one, or every one of a subscription): their subscription was
 * disabled. Returns the ids cancelled.
 */
/**
 * Why a pending delivery was cancelled (failure_reason): its subscription was disabled, or the
 * program of its event's order was withdrawn from the client (`admin programs revoke`) before it
 * was sent. Cancelled is final: granting the program again does not send it.
 */
export type CancelReason = 'subscription_disabled' | 'program_revoked';

export async function cancelPendingDeliveries(
  db: Database | Transaction,
  which: { deliveryId: string } | { subscriptionId: string },
  at: Date,
  reason: CancelReason = 'subscription_disabled',
): Promise<string[]> {
  const rows = await db
    .update(webhookDeliveries)
    .set({ state: CANCELLED, failureReason: reason, nextAttemptAt: null, completedAt: at })
    .where(
      and(
        'deliveryId' in which ? eq(webhookDeliveries.id, which.deliveryId) : eq(webhookDeliveries.subscriptionId, which.subscriptionId),
        eq(webhookDeliveries.state, PENDING),
      ),
    )
    .returning({ id: webhookDeliveries.id });
  return rows.map((row) => row.id);
}

/**
 * A held delivery: pending, with this failure_reason, and no job. Its subscription's client has no
 * active key left in the subscription's environment (spec: a subscription needs one), so nothing
 * is sent and no attempt is spent while it waits; resumeHeldDeliveries gives it its next job once
 * a key is active again. Kept in failure_reason (the column every delivery view shows) rather than
 * a new state: the delivery is still pending, exactly where its retry schedule left it.
 */
export const HELD_NO_ACTIVE_KEY = 'no_active_key';
/**
 * An API key that authenticates now (auth/authenticate.ts's rule): not revoked, not expired, its
 * client not disabled. Against api_keys as `k`; one text for the batch's access and the resume pass.
 */
const ACTIVE_KEY_SQL = `k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) and exists (select 1 from api_clients c where c.id = k.client_id and c.status = 'active')`;

/** Holds a pending delivery whose attempt `attemptsMade + 1` was due; false if it moved on meanwhile. */
export async function holdDelivery(db: Database, deliveryId: string, attemptsMade: number): Promise<boolean> {
  const rows = await db
    .update(webhookDeliveries)
    .set({ failureReason: HELD_NO_ACTIVE_KEY, nextAttemptAt: null })
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.state, PENDING), eq(webhookDeliveries.attemptsMade, attemptsMade)))
    .returning({ id: webhookDeliveries.id });
  return rows.length > 0;
}

/**
 * Held deliveries whose client has an active key again go on: each is released and gets the job
 * of its next attempt, in one transaction (a crash leaves it held, never released without a job).
 * SKIP LOCKED: every worker runs this pass, and a delivery is resumed once. Returns how many.
 */
export async function resumeHeldDeliveries(db: Database, queue: DeliveryQueue, limit = 500): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = await sqlOf(tx)<{ id: string; attempts_made: number; environment: 'sandbox' | 'production'; client_id: string }[]>`
      with ready as (
        select d.id, d.created_at from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id
        where d.state = 'pending' and d.failure_reason = ${HELD_NO_ACTIVE_KEY}
          and exists (select 1 from api_keys k where k.client_id = s.client_id and k.environment = s.environment and ${sqlOf(tx).unsafe(ACTIVE_KEY_SQL)})
        limit ${limit} for update of d skip locked)
      update webhook_deliveries d set failure_reason = null
      from ready, webhook_subscriptions s
      where d.id = ready.id and d.created_at = ready.created_at and s.id = d.subscription_id
      returning d.id, d.attempts_made, s.environment, s.client_id`;
    if (rows.length > 0) {
      await queue.enqueue(
        tx,
        rows.map((r) => ({ delivery_id: r.id, attempt: r.attempts_made + 1, environment: r.environment, clientId: r.client_id })),
      );
    }
    return rows.length;
  });
}

/** "Retry now": a pending delivery still at `attemptsMade` becomes due now. False if it moved on meanwhile. */
export async function makeRetryDueNow(tx: Transaction, deliveryId: string, attemptsMade: number): Promise<boolean> {
  const [row] = await tx
    .update(webhookDeliveries)
    .set({ nextAttemptAt: sql`now()` })
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.state, PENDING), eq(webhookDeliveries.attemptsMade, attemptsMade)))
    .returning({ id: webhookDeliveries.id });
  return Boolean(row);
}

// ---- Reading deliveries --------------------------------------------------------------------

/**
 * The delivery, its subscription and its event for a whole batch of jobs in one round trip,
 * through a prepared statement: at backlog rates a query per job and drizzle's
 * query building per job were most of the worker's time.
 */
const { body: _body, ...eventColumns } = getTableColumns(events);
const deliveriesByIds = preparedStatement((db) =>
  db
    .select({
      delivery: webhookDeliveries,
      subscription: webhookSubscriptions,
      // events.body through the row's JSON: null on the schema before 0014, where the column does
      // not exist and naming it would fail (this release serves both). One row per delivery.
      event: { ...eventColumns, body: sql<string | null>`to_jsonb(${events}) ->> 'body'` },
    })
    .from(webhookDeliveries)
    .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId))
    .leftJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(sql`${webhookDeliveries.id} = any(${sql.placeholder('ids')}::uuid[])`)
    .prepare('webhook_load_deliveries'),
);
export type LoadedDelivery = Awaited<ReturnType<ReturnType<typeof deliveriesByIds>['execute']>>[number];

/** The worker's batch load, by delivery id. */
export async function loadDeliveries(db: Database, deliveryIds: string[]): Promise<Map<string, LoadedDelivery>> {
  const rows = await deliveriesByIds(db).execute({ ids: [...new Set(deliveryIds)] });
  return new Map(rows.map((row) => [row.delivery.id, row]));
}

/** Whether a loaded delivery may be sent now (revocation, issue 33). */
export interface DeliveryAccess {
  /** Spec: a subscription needs an active key in its environment; without one its deliveries are held. */
  keyActive(subscription: LoadedDelivery['subscription']): boolean;
  /** The event's order is still readable by the subscription's client (the order reads' grant rule); otherwise it is cancelled, never sent. */
  programGranted(row: LoadedDelivery): boolean;
}

/**
 * The access of a batch's clients, in two small queries beside the batch load (not inside its
 * prepared statement, whose plan stays the one measured): which have an active key in which
 * environment, and which programs they are granted (programs.ts, grantsOf).
 */
export async function deliveryAccess(db: Database, rows: LoadedDelivery[]): Promise<DeliveryAccess> {
  const clientIds = [...new Set(rows.map((row) => row.subscription.clientId))];
  if (clientIds.length === 0) return { keyActive: () => false, programGranted: () => false };
  const [keyed, granted] = await Promise.all([
    sqlOf(db)<{ client_id: string; environment: string }[]>`
      select distinct k.client_id, k.environment from api_keys k where k.client_id = any(${clientIds}::uuid[]) and ${sqlOf(db).unsafe(ACTIVE_KEY_SQL)}`,
    grantsOf(db, clientIds),
  ]);
  const active = new Set(keyed.map((k) => `${k.client_id}:${k.environment}`));
  return {
    keyActive: (subscription) => active.has(`${subscription.clientId}:${subscription.environment}`),
    programGranted: ({ subscription, event }) => !event?.programId || granted.has(subscription.clientId, event.programId, subscription.environment),
  };
}

export async function deliveryById(db: Database | Transaction, deliveryId: string): Promise<DeliveryRow | undefined> {
  const [row] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId));
  return row;
}

/** Newest first. `dead` lists only dead letters: exhausted or permanently failed deliveries. */
export async function selectDeliveries(db: Database, filter: { subscriptionId?: string; dead?: boolean; limit?: number }): Promise<DeliveryRow[]> {
  return db
    .select()
    .from(webhookDeliveries)
    .where(
      and(
        filter.subscriptionId ? eq(webhookDeliveries.subscriptionId, filter.subscriptionId) : undefined,
        filter.dead ? eq(webhookDeliveries.state, DEAD_LETTERED) : undefined,
      ),
    )
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(filter.limit ?? 100);
}

/** The attempts of these deliveries, each delivery's in attempt order. */
export async function attemptsOf(db: Database, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db.select().from(webhookDeliveryAttempts).where(inArray(webhookDeliveryAttempts.deliveryId, deliveryIds)).orderBy(asc(webhookDeliveryAttempts.attemptNumber));
}

/** The ids of the replays of each delivery, oldest first. */
export async function replaysOf(db: Database, deliveryIds: string[]): Promise<Map<string, string[]>> {
  const replays = new Map<string, string[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return replays;
  const rows = await db
    .select({ id: webhookDeliveries.id, replayOf: webhookDeliveries.replayOf })
    .from(webhookDeliveries)
    .where(inArray(webhookDeliveries.replayOf, deliveryIds))
    .orderBy(asc(webhookDeliveries.createdAt), asc(webhookDeliveries.id));
  for (const row of rows) replays.get(row.replayOf!)!.push(row.id);
  return replays;
}

/**
 * The replay that recovered each of these dead letters (recover, or a resend of it), by dead letter
 * id; a dead letter not recovered has none. Not a column: the statement that marks a dead letter
 * recovered (insertRecoveryReplays, markRecovered) inserts its replay in the same transaction, so
 * the replay of the same event to the same endpoint created at the dead letter's `recovered_at`
 * (both the transaction's now()) is the one. Recover replays an event once for all its dead
 * letters, so several dead letters can lead to one replay.
 */
export async function recoveriesOf(db: Database, deliveryIds: string[]): Promise<Map<string, string>> {
  if (deliveryIds.length === 0) return new Map();
  const rows = await sqlOf(db)<{ id: string; replay_id: string }[]>`
    select d.id, r.id as replay_id
    from webhook_deliveries d
    join webhook_deliveries r on r.subscription_id = d.subscription_id and r.event_id = d.event_id and r.kind = 'replay' and r.created_at = d.recovered_at
    where d.id = any(${deliveryIds}::uuid[]) and d.recovered_at is not null`;
  return new Map(rows.map((row) => [row.id, row.replay_id]));
}

/**
 * Each subscription's deliveries by what they wait for; `retrying` are pending ones a failed
 * attempt left. `deadLettered` counts the dead letters still to act on: a recovered one (its event
 * replayed) is counted apart, as `recovered`.
 */
export async function deliveryCounts(db: Database, subscriptionIds: string[]) {
  if (subscriptionIds.length === 0) return [];
  return db
    .select({
      subscriptionId: webhookDeliveries.subscriptionId,
      delivered: sql<number>`count(*) filter (where ${webhookDeliveries.state} = 'delivered')::int`,
      pending: sql<number>`count(*) filter (where ${webhookDeliveries.state} = 'pending')::int`,
      // A failed attempt leaves its error class; a first attempt in flight has none yet.
      retrying: sql<number>`count(*) filter (where ${webhookDeliveries.state} = 'pending' and ${webhookDeliveries.lastErrorClass} is not null)::int`,
      deadLettered: sql<number>`count(*) filter (where ${webhookDeliveries.state} = 'dead_lettered' and ${webhookDeliveries.recoveredAt} is null)::int`,
      recovered: sql<number>`count(*) filter (where ${webhookDeliveries.state} = 'dead_lettered' and ${webhookDeliveries.recoveredAt} is not null)::int`,
    })
    .from(webhookDeliveries)
    .where(inArray(webhookDeliveries.subscriptionId, subscriptionIds))
    .groupBy(webhookDeliveries.subscriptionId);
}

/** Which deliveries a reader asked for: `failing` is what needs attention (retrying, dead and not recovered, failed tests). */
export type DeliveryFilter = 'all' | 'failing' | 'dead_lettered' | 'delivered';

export interface TenantDeliveryQuery {
  deliveryIds?: string[];
  subscriptionId?: string;
  filter?: DeliveryFilter;
  /** Only deliveries after this one in the newest-first order (a page's cursor). */
  afterId?: string;
  /** Newest first with a limit; otherwise oldest first. */
  newestFirst?: { limit: number };
}

/**
 * Deliveries joined to the subscription (for ownership and URL) and the event (for its type),
 * only ever of the tenant's own subscriptions: every query adds its condition to the tenancy.
 */
export async function tenantDeliveries(db: Database, tenant: Tenant, query: TenantDeliveryQuery) {
  const filter = query.filter ?? 'all';
  const state =
    filter === 'failing'
      ? sql`((${webhookDeliveries.state} = 'dead_lettered' and ${webhookDeliveries.recoveredAt} is null) or ${webhookDeliveries.state} = 'failed' or (${webhookDeliveries.state} = 'pending' and ${webhookDeliveries.lastErrorClass} is not null))`
      : filter === 'all'
        ? undefined
        : eq(webhookDeliveries.state, filter);
  const select = db
    .select({ delivery: webhookDeliveries, url: webhookSubscriptions.url, eventType: events.type })
    .from(webhookDeliveries)
    .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId))
    .leftJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(
      and(
        eq(webhookSubscriptions.laboratoryId, tenant.laboratoryId),
        eq(webhookSubscriptions.clientId, tenant.clientId),
        eq(webhookSubscriptions.environment, tenant.environment),
        query.deliveryIds ? inArray(webhookDeliveries.id, query.deliveryIds) : undefined,
        query.subscriptionId ? eq(webhookDeliveries.subscriptionId, query.subscriptionId) : undefined,
        state,
        // Compared in SQL: created_at keeps microseconds a JavaScript Date would round away.
        query.afterId
          ? sql`(${webhookDeliveries.createdAt}, ${webhookDeliveries.id}) < (select d.created_at, d.id from webhook_deliveries d where d.id = ${query.afterId})`
          : undefined,
      ),
    )
    .$dynamic();
  return query.newestFirst
    ? select.orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id)).limit(query.newestFirst.limit)
    : select.orderBy(webhookDeliveries.createdAt, webhookDeliveries.id);
}
export type TenantDeliveryRow = Awaited<ReturnType<typeof tenantDeliveries>>[number];

/** Whether the delivery is one of the subscription's (a page cursor must name one). */
export async function isDeliveryOf(db: Database, deliveryId: string, subscriptionId: string): Promise<boolean> {
  const [found] = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.subscriptionId, subscriptionId)));
  return Boolean(found);
}

/** The deliveries of these events to these subscriptions, oldest first. */
export async function deliveriesOfEvents(db: Database, eventIds: string[], subscriptionIds: string[]): Promise<DeliveryRow[]> {
  if (eventIds.length === 0 || subscriptionIds.length === 0) return [];
  return db
    .select()
    .from(webhookDeliveries)
    .where(and(inArray(webhookDeliveries.eventId, eventIds), inArray(webhookDeliveries.subscriptionId, subscriptionIds)))
    .orderBy(asc(webhookDeliveries.createdAt), asc(webhookDeliveries.id));
}

// ---- An endpoint's health ------------------------------------------------------------------

export interface AttemptBucket {
  /** The bucket's start (UTC, on the hour). */
  start: Date;
  attempts: number;
  /** Attempts the endpoint answered with a 2xx. */
  succeeded: number;
  /** Attempts that failed (any other answer, none, or cut off), retried or not. */
  failed: number;
  /** Attempts sent and not answered yet. */
  inFlight: number;
  /** Latency of the attempts that ended (milliseconds), median and 95th percentile; null without any. */
  p50Ms: number | null;
  p95Ms: number | null;
}

/**
 * An endpoint's attempts in [from, to) by hour (hours with no attempt are absent), and the whole
 * window (`total`, start = from). Read from the attempts table through its partition key
 * (started_at), so only the partitions that can hold the window are scanned
 * (webhook_delivery_attempts is partitioned by week), joined to the endpoint's deliveries and the
 * tenant's subscription.
 */
export async function attemptBuckets(db: Database, tenant: Tenant, subscriptionId: string, window: { from: Date; to: Date }): Promise<{ hours: AttemptBucket[]; total: AttemptBucket }> {
  const rows = await attemptBucketsStatement(sqlOf(db), tenant, subscriptionId, window);
  const bucket = (r: (typeof rows)[number]): AttemptBucket => ({
    start: r.start === null ? window.from : new Date(r.start),
    attempts: r.attempts,
    succeeded: r.succeeded,
    failed: r.failed,
    inFlight: r.in_flight,
    p50Ms: r.p50,
    p95Ms: r.p95,
  });
  const total = rows.find((r) => r.start === null);
  return {
    hours: rows.filter((r) => r.start !== null).map(bucket),
    total: total ? bucket(total) : { start: window.from, attempts: 0, succeeded: 0, failed: 0, inFlight: 0, p50Ms: null, p95Ms: null },
  };
}

/** attemptBuckets' statement, not yet run (its test explains it to see which partitions it reads). */
export function attemptBucketsStatement(sql: Sql, tenant: Tenant, subscriptionId: string, window: { from: Date; to: Date }) {
  const from = window.from.toISOString();
  return sql<{ start: Date | null; attempts: number; succeeded: number; failed: number; in_flight: number; p50: number | null; p95: number | null }[]>`
    select date_bin('1 hour', a.started_at, ${from}::timestamptz) as start,
           count(*)::int as attempts,
           count(*) filter (where a.outcome = 'delivered')::int as succeeded,
           count(*) filter (where a.outcome in ('retry', 'dead_lettered', 'failed'))::int as failed,
           count(*) filter (where a.outcome = ${SENDING})::int as in_flight,
           percentile_disc(0.5) within group (order by a.duration_ms) filter (where a.outcome <> ${SENDING}) as p50,
           percentile_disc(0.95) within group (order by a.duration_ms) filter (where a.outcome <> ${SENDING}) as p95
    from webhook_delivery_attempts a
    join webhook_deliveries d on d.id = a.delivery_id
    join webhook_subscriptions s on s.id = d.subscription_id
    where a.started_at >= ${from}::timestamptz and a.started_at < ${window.to.toISOString()}::timestamptz
      and d.subscription_id = ${subscriptionId}
      and s.laboratory_id = ${tenant.laboratoryId} and s.client_id = ${tenant.clientId} and s.environment = ${tenant.environment}
    group by grouping sets ((1), ())
    order by 1 nulls first`;
}

export interface BucketAttempt {
  attemptId: string;
  deliveryId: string;
  attempt: number;
  startedAt: Date;
  durationMs: number | null;
  statusCode: number | null;
  errorClass: string | null;
  outcome: WebhookAttemptOutcome;
  kind: string;
  eventType: string | null;
}

/** The endpoint's attempts in [from, to), newest first, at most `limit` (the attempts behind one bucket). */
export async function attemptsInWindow(db: Database, tenant: Tenant, subscriptionId: string, window: { from: Date; to: Date }, limit: number): Promise<BucketAttempt[]> {
  const rows = await sqlOf(db)<
    { id: string; delivery_id: string; attempt_number: number; started_at: Date; duration_ms: number | null; status_code: number | null; error_class: string | null; outcome: WebhookAttemptOutcome; kind: string; event_type: string | null }[]
  >`
    select a.id, a.delivery_id, a.attempt_number, a.started_at, a.duration_ms, a.status_code, a.error_class, a.outcome, d.kind, e.type as event_type
    from webhook_delivery_attempts a
    join webhook_deliveries d on d.id = a.delivery_id
    join webhook_subscriptions s on s.id = d.subscription_id
    left join events e on e.id = d.event_id
    where a.started_at >= ${window.from.toISOString()}::timestamptz and a.started_at < ${window.to.toISOString()}::timestamptz
      and d.subscription_id = ${subscriptionId}
      and s.laboratory_id = ${tenant.laboratoryId} and s.client_id = ${tenant.clientId} and s.environment = ${tenant.environment}
    order by a.started_at desc, a.id desc
    limit ${limit}`;
  return rows.map((r) => ({
    attemptId: r.id,
    deliveryId: r.delivery_id,
    attempt: r.attempt_number,
    startedAt: new Date(r.started_at),
    durationMs: r.duration_ms,
    statusCode: r.status_code,
    errorClass: r.error_class,
    outcome: r.outcome,
    kind: r.kind,
    eventType: r.event_type,
  }));
}

export interface DeliveryBacklog {
  /** Pending deliveries whose next attempt is due now (the queue depth a worker has to drain). */
  due: number;
  /** Pending deliveries waiting for a scheduled retry. */
  scheduled: number;
  /** Seconds the oldest due delivery has been waiting since it became due; 0 when none is due. */
  oldestDueSeconds: number;
}

/** The delivery backlog as PostgreSQL sees it: the delivery rows are the truth, pg-boss jobs only wake workers. */
export async function readDeliveryBacklog(sql: Sql): Promise<DeliveryBacklog> {
  const [row] = await sql<{ due: number; scheduled: number; oldest_due_seconds: number }[]>`
    select count(*) filter (where coalesce(next_attempt_at, created_at) <= now())::int as due,
           count(*) filter (where next_attempt_at > now())::int as scheduled,
           coalesce(extract(epoch from now() - min(coalesce(next_attempt_at, created_at)) filter (where coalesce(next_attempt_at, created_at) <= now())), 0)::float8 as oldest_due_seconds
    from webhook_deliveries where state = 'pending' and failure_reason is distinct from ${HELD_NO_ACTIVE_KEY}`;
  return { due: row.due, scheduled: row.scheduled, oldestDueSeconds: row.oldest_due_seconds };
}

// ---- Retention -----------------------------------------------------------------------------

/**
 * One batch of the retention pass: up to `batch` deliveries that reached a final state before
 * `before`, with their attempts. A pending delivery is never pruned, however old. With
 * `createdBefore`, only deliveries created before it (on the partitioned table: the legacy
 * partition and weeks overdue for their drop; the others go whole, dropDeliveryPartitions).
 */
export async function pruneFinishedDeliveries(sql: Sql, before: string, batch: number, createdBefore?: string): Promise<{ attempts: number; deliveries: number }> {
  // Attempts and their delivery go in one statement; SKIP LOCKED leaves a row a worker or the
  // control plane is touching right now to the next run.
  const [row] = await sql<{ attempts: number; deliveries: number }[]>`
    with finished as (
      select id from webhook_deliveries
      where completed_at < ${before}::timestamptz and state <> 'pending' ${createdBefore === undefined ? sql`` : sql`and created_at < ${createdBefore}::timestamptz`}
      limit ${batch}
      for update skip locked),
    attempts as (delete from webhook_delivery_attempts a using finished f where a.delivery_id = f.id returning 1),
    deliveries as (delete from webhook_deliveries d using finished f where d.id = f.id returning 1)
    select (select count(*) from attempts)::int as attempts, (select count(*) from deliveries)::int as deliveries`;
  return row;
}

/** The period of webhook_deliveries' and webhook_delivery_attempts' partitions (migration 0021). */
export const DELIVERY_PARTITION_UNIT = 'week' as const;

export interface DroppedPartition {
  table: string;
  partition: string;
  /** Counted (count(*)) just before the drop: rows cannot enter a partition whose range has passed. */
  rows: number;
  /** A deliveries week: its deliveries' attempts that sat in later weeks, deleted by row before it went. */
  attemptsDeleted?: number;
}

/**
 * The retention pass on the partitioned tables: every partition whose whole range ended before
 * `before` (the window's start) and that holds nothing still kept is detached and dropped, its
 * rows counted. Kept means a pending delivery (however old), a delivery finished within the
 * window, and any attempt of either. Attempts go first, then deliveries ("attempts with or before
 * their delivery"): an attempts week whose deliveries are all past the window goes; a deliveries
 * week goes with the few attempts of its deliveries that started after it ended (retries across
 * the boundary, in a later week still kept), deleted by row first. A week still holding a pending
 * delivery stays until that delivery ends and its window passes; the row pass
 * (pruneFinishedDeliveries) meanwhile removes what is finished in it once it is a week overdue.
 * Nothing happens before migration 0022 (no partitions).
 */
export async function dropDeliveryPartitions(sql: Sql, before: Date): Promise<DroppedPartition[]> {
  const dropped: DroppedPartition[] = [];
  const cutoff = before.toISOString();
  const attempts = await listPartitions(sql, 'webhook_delivery_attempts');
  for (const partition of attempts.filter((p) => !p.isDefault && p.to !== null && p.to <= before)) {
    const [row] = await sql.unsafe<{ rows: number; kept: boolean }[]>(
      `select count(*)::int as rows,
              exists (select 1 from "${partition.name}" a join webhook_deliveries d on d.id = a.delivery_id
                      where d.state = 'pending' or coalesce(d.completed_at >= $1::timestamptz, true)) as kept
       from "${partition.name}"`,
      [cutoff],
    );
    if (row.kept) continue;
    await detachPartition(sql, 'webhook_delivery_attempts', partition);
    dropped.push({ table: 'webhook_delivery_attempts', partition: partition.name, rows: row.rows });
  }
  const deliveries = await listPartitions(sql, 'webhook_deliveries');
  for (const partition of deliveries.filter((p) => !p.isDefault && p.to !== null && p.to <= before)) {
    const [row] = await sql.unsafe<{ rows: number; kept: boolean }[]>(
      `select count(*)::int as rows,
              exists (select 1 from "${partition.name}" where state = 'pending' or coalesce(completed_at >= $1::timestamptz, true)) as kept
       from "${partition.name}"`,
      [cutoff],
    );
    if (row.kept) continue;
    // Only a delivery that ended after its week did can have an attempt started after it.
    const stragglers = await sql.unsafe(
      `delete from webhook_delivery_attempts a using "${partition.name}" d
       where a.delivery_id = d.id and d.completed_at >= $1::timestamptz and a.started_at >= $1::timestamptz`,
      [partition.to!.toISOString()],
    );
    await detachPartition(sql, 'webhook_deliveries', partition);
    dropped.push({ table: 'webhook_deliveries', partition: partition.name, rows: row.rows, attemptsDeleted: stragglers.count });
  }
  return dropped;
}
