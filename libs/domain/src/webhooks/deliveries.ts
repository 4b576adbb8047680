import { randomUUID } from 'node:crypto';
import { and, asc, desc, eq, inArray } from 'drizzle-orm';
import { sqlOf, webhookDeliveries, webhookDeliveryAttempts, type Database, type Transaction } from '@lop/db';
import type { Environment } from '../auth/scopes';
import { ControlPlaneError } from '../control-plane/control-plane';
import type { EventType } from '../events/events.schemas';
import type { DataProtector } from '../security/protector';
import { activeTraceparent } from '../telemetry/tracing';
import { claimAttempt, completeAttempt, verdictOf } from './attempt-log';
import { attemptDelivery, systemClock, type AttemptOptions } from './delivery-attempt';
import type { DeliveryQueue } from './delivery-queue';
import { decideNext } from './retry-policy';
import { getSubscription } from './subscriptions';
import { testEvent } from './test-event';

/** Control-plane views of deliveries and their attempts, dead letters, replay and test deliveries. */

type DeliveryRow = typeof webhookDeliveries.$inferSelect;
type AttemptRow = typeof webhookDeliveryAttempts.$inferSelect;

function describeAttempt(a: AttemptRow) {
  return {
    // The x-partner-delivery-id header value this attempt was sent with.
    attempt_id: a.id,
    attempt: a.attemptNumber,
    started_at: a.startedAt.toISOString(),
    duration_ms: a.durationMs,
    status_code: a.statusCode,
    error_class: a.errorClass,
    outcome: a.outcome,
    retry_after_seconds: a.retryAfterSeconds,
    next_attempt_at: a.nextAttemptAt?.toISOString() ?? null,
    destination_address: a.destinationAddress,
  };
}

function describeDelivery(d: DeliveryRow, attempts: AttemptRow[], replayedBy: string[]) {
  return {
    delivery_id: d.id,
    subscription_id: d.subscriptionId,
    event_id: d.eventId,
    kind: d.kind,
    replay_of: d.replayOf,
    // The other way round: the replays of this delivery, oldest first (a dead letter leads to them).
    replayed_by: replayedBy,
    requested_by: d.requestedBy,
    state: d.state,
    failure_reason: d.failureReason,
    attempts_made: d.attemptsMade,
    next_attempt_at: d.nextAttemptAt?.toISOString() ?? null,
    last_status_code: d.lastStatusCode,
    last_error_class: d.lastErrorClass,
    created_at: d.createdAt.toISOString(),
    completed_at: d.completedAt?.toISOString() ?? null,
    attempts: attempts.map(describeAttempt),
  };
}
export type DeliveryView = ReturnType<typeof describeDelivery>;

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

async function withAttempts(db: Database, rows: DeliveryRow[]): Promise<DeliveryView[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [attempts, replays] = await Promise.all([
    db.select().from(webhookDeliveryAttempts).where(inArray(webhookDeliveryAttempts.deliveryId, ids)).orderBy(asc(webhookDeliveryAttempts.attemptNumber)),
    replaysOf(db, ids),
  ]);
  return rows.map((row) =>
    describeDelivery(
      row,
      attempts.filter((a) => a.deliveryId === row.id),
      replays.get(row.id)!,
    ),
  );
}

/** Newest first. `dead` lists only dead letters: exhausted or permanently failed deliveries. */
export async function listDeliveries(db: Database, filter: { subscriptionId?: string; dead?: boolean; limit?: number } = {}): Promise<DeliveryView[]> {
  const rows = await db
    .select()
    .from(webhookDeliveries)
    .where(
      and(
        filter.subscriptionId ? eq(webhookDeliveries.subscriptionId, filter.subscriptionId) : undefined,
        filter.dead ? eq(webhookDeliveries.state, 'dead_lettered') : undefined,
      ),
    )
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(filter.limit ?? 100);
  return withAttempts(db, rows);
}

export async function getDelivery(db: Database, deliveryId: string): Promise<DeliveryView> {
  const [row] = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId));
  if (!row) throw new ControlPlaneError(`no webhook delivery ${deliveryId}`);
  return (await withAttempts(db, [row]))[0];
}

/** Another replay or recovery of the same endpoint holds the endpoint's replay lock right now. */
export class RecoveryInProgressError extends ControlPlaneError {
  override name = 'RecoveryInProgressError';
}

/** The event already has a delivery pending on the endpoint: a second one would only duplicate it. */
export class ReplayPendingError extends ControlPlaneError {
  override name = 'ReplayPendingError';
}

/**
 * Every replay of an endpoint (resend, recover) runs under this transaction-scoped advisory lock,
 * taken with try: a concurrent one is refused at once instead of holding a pooled connection
 * while it waits.
 */
async function lockEndpointReplays(tx: Transaction, subscriptionId: string): Promise<void> {
  const [{ locked }] = await sqlOf(tx)<{ locked: boolean }[]>`
    select pg_try_advisory_xact_lock(hashtext('webhook_recover'), hashtext(${subscriptionId})) as locked`;
  if (!locked) throw new RecoveryInProgressError(`a replay or recovery of webhook subscription ${subscriptionId} is already running; try again in a moment`);
}

/**
 * A new delivery (new delivery id, fresh attempt chain) of the same event to the same
 * subscription, linked to the original by `replay_of` and recording who asked. The original is
 * left exactly as it was: the history stays auditable. Idempotent while it matters: refused when
 * a delivery of the event to the endpoint is still pending (a replay asked twice, two tabs).
 */
export async function replayDelivery(db: Database, queue: DeliveryQueue, deliveryId: string, requestedBy: string): Promise<DeliveryView> {
  const replayId = await db.transaction(async (tx) => {
    const [original] = await tx.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId));
    if (!original) throw new ControlPlaneError(`no webhook delivery ${deliveryId}`);
    if (!original.eventId) throw new ControlPlaneError(`delivery ${deliveryId} is a test delivery; send a new one with webhooks test`);
    if (original.state === 'pending') throw new ControlPlaneError(`delivery ${deliveryId} is still pending; replay it once it is delivered or dead-lettered`);
    // On the transaction's own connection: a second pooled one per replay could exhaust the pool.
    const subscription = await getSubscription(tx, original.subscriptionId);
    if (subscription.status !== 'active') throw new ControlPlaneError(`webhook subscription ${subscription.id} is disabled`);
    await lockEndpointReplays(tx, subscription.id);
    const [pending] = await tx
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.subscriptionId, subscription.id), eq(webhookDeliveries.eventId, original.eventId), eq(webhookDeliveries.state, 'pending')))
      .limit(1);
    if (pending) throw new ReplayPendingError(`delivery ${pending.id} of the same event is still pending; replay once it is delivered or dead-lettered`);
    const [replay] = await tx
      .insert(webhookDeliveries)
      // The replay's attempts join the trace of whoever asked for it (a console request), not the original's.
      .values({ subscriptionId: original.subscriptionId, eventId: original.eventId, kind: 'replay', replayOf: original.id, requestedBy, state: 'pending', nextAttemptAt: new Date(), traceparent: activeTraceparent() })
      .returning({ id: webhookDeliveries.id });
    await queue.enqueue(tx, [{ delivery_id: replay.id, attempt: 1, environment: subscription.environment, clientId: subscription.clientId }]);
    return replay.id;
  });
  return getDelivery(db, replayId);
}

/** At most this many events are replayed by one recover call; the answer says how many remain. */
export const RECOVER_MAX_EVENTS = 1000;

/**
 * Svix's "recover": one replay per dead-lettered EVENT of the endpoint since `since`, oldest
 * first, at most `limit`. In one transaction, under a transaction-scoped advisory lock of the
 * endpoint (a concurrent call is refused at once instead of waiting on a pooled connection): the
 * dead letters whose events are replayed are marked recovered, so neither a concurrent call nor a
 * later one replays them again. A replay that dead-letters is a new dead letter of its event, and
 * the next call replays that event once more: once per event per call, never once per dead letter
 * (which is how replays multiplied). An event with a delivery still pending on the endpoint is
 * left to it, and one the endpoint has received (a delivered delivery) needs no replay.
 */
export async function recoverDeadLetters(
  db: Database,
  queue: DeliveryQueue,
  input: { subscriptionId: string; environment: Environment; clientId: string; since: Date; requestedBy: string; limit?: number },
): Promise<{ replayIds: string[]; remaining: number }> {
  const limit = input.limit ?? RECOVER_MAX_EVENTS;
  return db.transaction(async (tx) => {
    const client = sqlOf(tx);
    await lockEndpointReplays(tx, input.subscriptionId);
    const since = input.since.toISOString();
    const [row] = await client<{ candidates: number; replay_ids: string[] }[]>`
      with candidates as (
        select d.event_id, (array_agg(d.id order by d.created_at desc, d.id desc))[1] as latest, min(d.created_at) as first_at
        from webhook_deliveries d
        where d.subscription_id = ${input.subscriptionId} and d.state = 'dead_lettered' and d.event_id is not null
          and d.recovered_at is null and d.created_at >= ${since}::timestamptz
          and not exists (select 1 from webhook_deliveries p where p.subscription_id = d.subscription_id and p.event_id = d.event_id and p.state in ('pending', 'delivered'))
        group by d.event_id),
      chosen as (select * from candidates order by first_at, event_id limit ${limit}),
      marked as (
        update webhook_deliveries d set recovered_at = now()
        from chosen c
        where d.subscription_id = ${input.subscriptionId} and d.event_id = c.event_id and d.state = 'dead_lettered'
          and d.recovered_at is null and d.created_at >= ${since}::timestamptz
        returning d.id),
      replays as (
        insert into webhook_deliveries (subscription_id, event_id, kind, replay_of, requested_by, state, next_attempt_at, traceparent)
        select ${input.subscriptionId}, c.event_id, 'replay', c.latest, ${input.requestedBy}, 'pending', now(), ${activeTraceparent()}::text
        from chosen c
        order by c.first_at, c.event_id
        returning id)
      select (select count(*) from candidates)::int as candidates,
             (select count(*) from marked)::int as marked,
             coalesce((select array_agg(id) from replays), '{}') as replay_ids`;
    const replayIds = row.replay_ids;
    await queue.enqueue(
      tx,
      replayIds.map((id) => ({ delivery_id: id, attempt: 1, environment: input.environment, clientId: input.clientId })),
    );
    return { replayIds, remaining: row.candidates - replayIds.length };
  });
}

/** A stored answer excerpt as text for a reader: UTF-8, an invalid sequence as U+FFFD (a NUL stays a NUL). */
export function excerptText(bytes: Buffer | null): string | null {
  return bytes === null ? null : new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}

/**
 * A signed test delivery, sent now from the calling process: an event envelope of `type`
 * (default order.created) built like a real one, with every header a real delivery carries,
 * flagged as a test (test-event.ts, TEST_DELIVERY_HEADER). The event is in no stream. Recorded
 * as a `test` delivery with its one attempt (claimed before the request leaves, like every
 * attempt), whose id is the x-partner-delivery-id sent; never retried. Whatever the receiver
 * answers is its outcome: the caller gets the delivery back.
 */
export async function sendTestDelivery(db: Database, protector: DataProtector, subscriptionId: string, options: Omit<AttemptOptions, 'signal'>, test: { type?: EventType } = {}) {
  const subscription = await getSubscription(db, subscriptionId);
  if (subscription.status !== 'active') throw new ControlPlaneError(`webhook subscription ${subscriptionId} is disabled`);
  const clock = options.clock ?? systemClock;
  const [delivery] = await db.insert(webhookDeliveries).values({ subscriptionId, kind: 'test', state: 'pending' }).returning();
  const event = testEvent(test.type ?? 'order.created', subscription, new Date(clock()));
  const body = JSON.stringify(event);
  const attemptId = randomUUID();
  const claim = (sending: { startedAt: Date; address: string | null; requestHeaders: Record<string, string> | null }) =>
    claimAttempt(db, {
      deliveryId: delivery.id,
      attempt: 1,
      attemptId,
      ...sending,
      requestBody: sending.requestHeaders === null ? null : body,
      maxAttempts: 1,
      leaseSeconds: Math.ceil(options.timeoutMs / 1000) + 5,
    });
  let claimed = false;
  const report = await attemptDelivery(
    {
      url: subscription.url,
      environment: subscription.environment,
      secret: protector.decrypt<string>(subscription.secretProtected),
      body,
      deliveryId: attemptId,
      eventId: event.event_id,
      test: true,
      beforeSend: async (sending) => {
        claimed = await claim(sending);
      },
    },
    options,
  );
  if (!claimed) await claim({ startedAt: report.startedAt, address: report.address, requestHeaders: null });
  // One attempt only: classify it like a delivery's last attempt.
  const decision = decideNext(report.result, 1, { delaysSeconds: [], retryAfterMaxSeconds: 0 }, clock());
  const outcome = decision.outcome === 'delivered' ? 'delivered' : 'failed';
  await completeAttempt(db, null, {
    ...verdictOf(delivery.id, 1, report, decision, clock()),
    outcome,
    deliveryState: outcome,
    failureReason: null,
  });
  return { ...(await getDelivery(db, delivery.id)), detail: report.detail };
}
