import { randomUUID } from 'node:crypto';
import type { Environment, EventType } from '@lop/contract';
import type { Database, Transaction } from '@lop/db';
import type { DataProtector } from '../security/protector';
import { activeTraceparent } from '../telemetry/tracing';
import {
  attemptsOf,
  claimAttempt,
  completeAttempt,
  deliveryById,
  insertRecoveryReplays,
  insertReplay,
  insertTestDelivery,
  markRecovered,
  pendingDeliveryOfEvent,
  recoveriesOf,
  replaysOf,
  selectDeliveries,
  tryLockEndpointReplays,
  verdictOf,
  type DeliveryRow,
} from './delivery-store';
import { describeDelivery, type DeliveryView } from './delivery-view';
import { attemptDelivery, systemClock, type AttemptOptions } from './delivery-attempt';
import type { DeliveryQueue } from './delivery-queue';
import { subscriptionDisabled, WebhookError } from './errors';
import { decideNext } from './retry-policy';
import { getSubscription } from './subscriptions';
import { testEvent } from './test-event';

/** Control-plane views of deliveries and their attempts, dead letters, replay and test deliveries. */

async function withAttempts(db: Database, rows: DeliveryRow[]): Promise<DeliveryView[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [attempts, replays, recoveries] = await Promise.all([attemptsOf(db, ids), replaysOf(db, ids), recoveriesOf(db, ids)]);
  return rows.map((row) =>
    describeDelivery(
      row,
      attempts.filter((a) => a.deliveryId === row.id),
      replays.get(row.id)!,
      recoveries.get(row.id) ?? null,
    ),
  );
}

/** Newest first. `dead` lists only dead letters: exhausted or permanently failed deliveries. */
export async function listDeliveries(db: Database, filter: { subscriptionId?: string; dead?: boolean; limit?: number } = {}): Promise<DeliveryView[]> {
  return withAttempts(db, await selectDeliveries(db, filter));
}

export async function getDelivery(db: Database, deliveryId: string): Promise<DeliveryView> {
  const row = await deliveryById(db, deliveryId);
  if (!row) throw new WebhookError('not_found', `no webhook delivery ${deliveryId}`);
  return (await withAttempts(db, [row]))[0];
}

/** Every replay of an endpoint (resend, recover) holds the endpoint's replay lock; a concurrent one is refused at once. */
async function lockEndpointReplays(tx: Transaction, subscriptionId: string): Promise<void> {
  if (!(await tryLockEndpointReplays(tx, subscriptionId))) {
    throw new WebhookError('recovery_in_progress', `a replay or recovery of webhook subscription ${subscriptionId} is already running; try again in a moment`);
  }
}

/**
 * A new delivery (new delivery id, fresh attempt chain) of the same event to the same
 * subscription, linked to the original by `replay_of` and recording who asked. The original keeps
 * its attempts and state (the history stays auditable); the event's dead letters on the endpoint
 * are marked recovered by this replay, as recover marks them. Idempotent while it matters: refused
 * when a delivery of the event to the endpoint is still pending (a replay asked twice, two tabs).
 */
export async function replayDelivery(db: Database, queue: DeliveryQueue, deliveryId: string, requestedBy: string): Promise<DeliveryView> {
  const replayId = await db.transaction(async (tx) => {
    const original = await deliveryById(tx, deliveryId);
    if (!original) throw new WebhookError('not_found', `no webhook delivery ${deliveryId}`);
    if (!original.eventId) throw new WebhookError('not_allowed', `delivery ${deliveryId} is a test delivery; send a new one with webhooks test`);
    if (original.state === 'pending') throw new WebhookError('not_allowed', `delivery ${deliveryId} is still pending; replay it once it is delivered or dead-lettered`);
    // On the transaction's own connection: a second pooled one per replay could exhaust the pool.
    const subscription = await getSubscription(tx, original.subscriptionId);
    if (subscription.status !== 'active') throw subscriptionDisabled(subscription.id);
    await lockEndpointReplays(tx, subscription.id);
    const pending = await pendingDeliveryOfEvent(tx, subscription.id, original.eventId);
    if (pending) throw new WebhookError('replay_pending', `delivery ${pending} of the same event is still pending; replay once it is delivered or dead-lettered`);
    // The replay's attempts join the trace of whoever asked for it (a console request), not the original's.
    const replayId = await insertReplay(tx, { ...original, eventId: original.eventId }, requestedBy, activeTraceparent());
    await markRecovered(tx, subscription.id, original.eventId);
    await queue.enqueue(tx, [{ delivery_id: replayId, attempt: 1, environment: subscription.environment, clientId: subscription.clientId }]);
    return replayId;
  });
  return getDelivery(db, replayId);
}

/** At most this many events are replayed by one recover call; the answer says how many remain. */
export const RECOVER_MAX_EVENTS = 1000;
/** How long after a recover its events are not recovered again: longer than a double click, two tabs or a retried script. */
export const RECOVER_SETTLE_SECONDS = 30;

/**
 * Svix's "recover": one replay per dead-lettered EVENT of the endpoint since `since`, oldest
 * first, at most `limit`. The rules, all in the store's one statement (insertRecoveryReplays):
 *
 * - a dead letter is recovered once: the call marks it recovered (`recovered_at`) in the
 *   transaction that inserts its event's replay, and no later call takes it again;
 * - an event with a delivery still pending on the endpoint (a replay waiting, retrying, held, or
 *   in flight right now) is skipped, so calls in quick succession (a double click, two tabs, a
 *   script) make one set of replays; one the endpoint has received (delivered) needs none;
 * - an event recovered less than RECOVER_SETTLE_SECONDS ago is left alone (counted as
 *   `settling`), even if its replay has died already: against an endpoint that answers 410 at once
 *   a replay dies within moments, and five calls a few hundred ms apart replayed the same events
 *   again and again;
 * - after that, a replay that dead-lettered in its turn is a new dead letter of the event, not yet
 *   recovered: the next call replays the event once more (the endpoint may be fixed by then). Once
 *   per event per call, never once per dead letter (which is how replays multiplied).
 *
 * In one transaction under the endpoint's transaction-scoped advisory lock, taken with try: a
 * call that overlaps another (or a resend) is refused at once (409) rather than wait on a pooled
 * connection, and the call that holds it sees every replay committed before it.
 */
export async function recoverDeadLetters(
  db: Database,
  queue: DeliveryQueue,
  input: { subscriptionId: string; environment: Environment; clientId: string; since: Date; requestedBy: string; limit?: number; settleSeconds?: number },
): Promise<{ replayIds: string[]; remaining: number; settling: number }> {
  const limit = input.limit ?? RECOVER_MAX_EVENTS;
  const settleSeconds = input.settleSeconds ?? RECOVER_SETTLE_SECONDS;
  return db.transaction(async (tx) => {
    await lockEndpointReplays(tx, input.subscriptionId);
    const { candidates, settling, replayIds } = await insertRecoveryReplays(tx, { subscriptionId: input.subscriptionId, since: input.since, requestedBy: input.requestedBy, limit, settleSeconds, traceparent: activeTraceparent() });
    await queue.enqueue(
      tx,
      replayIds.map((id) => ({ delivery_id: id, attempt: 1, environment: input.environment, clientId: input.clientId })),
    );
    return { replayIds, remaining: candidates - replayIds.length, settling };
  });
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
  if (subscription.status !== 'active') throw subscriptionDisabled(subscriptionId);
  const clock = options.clock ?? systemClock;
  const delivery = await insertTestDelivery(db, subscriptionId);
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
      secret: await protector.open<string>(subscription.secretProtected),
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
