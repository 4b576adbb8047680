import type { EventType } from '@lop/contract';
import type { Database } from '@lop/db';
import type { ControlActor } from '../audit/record';
import type { Caller } from '../auth/authenticate';
import { cursorCodec, rowIdPosition } from '../http/cursor';
import { notFound, PartnerError } from '../http/errors';
import type { DataProtector } from '../security/protector';
import { recoverDeadLetters, replayDelivery, sendTestDelivery } from '../webhooks/deliveries';
import {
  attemptBuckets,
  attemptsInWindow,
  attemptsOf,
  deliveryCounts,
  isDeliveryOf,
  makeRetryDueNow,
  recoveriesOf,
  replaysOf,
  SENDING,
  tenantDeliveries,
  type AttemptBucket,
  type DeliveryFilter,
  type TenantDeliveryRow,
} from '../webhooks/delivery-store';
import { describeDelivery, excerptText } from '../webhooks/delivery-view';
import type { DestinationPolicy } from '../webhooks/destination-guard';
import { requireDeliveryQueue } from '../webhooks/outbox';
import { subscriptionDisabled, WebhookError } from '../webhooks/errors';
import {
  createSubscription,
  disableSubscription,
  findOwnedSubscription,
  rotateSubscriptionSecret,
  setSubscriptionEventTypes,
  subscriptionsOf,
  type SubscriptionRow,
} from '../webhooks/subscriptions';
import type { ConsoleWebhookDelivery, ConsoleWebhookEndpoint, ConsoleWebhookHealth } from './console.schemas';

/**
 * Sandbox webhook self-service for the console: a partner registers, tests, rotates and disables
 * its own sandbox endpoints and works its delivery log (resend, retry now, recover). Every
 * function takes the caller and touches only the caller's own sandbox subscriptions; production
 * subscriptions stay with the laboratory's administrators (admin CLI). The console door already
 * refuses production keys; each function refuses them again, so no other door can reach this.
 */

export interface WebhookSelfServiceSettings {
  destination: DestinationPolicy;
  attemptTimeoutMs: number;
}

/** More than any integration needs, few enough that a sandbox cannot be turned into a fan-out. */
export const MAX_SANDBOX_ENDPOINTS = 10;

export const DELIVERY_PAGE_DEFAULT = 25;
export const DELIVERY_PAGE_MAX = 100;

function requireSandbox(caller: Caller): void {
  if (caller.environment !== 'sandbox') {
    throw new PartnerError('forbidden', 'Production webhook endpoints are managed by the laboratory’s administrators; the console manages sandbox endpoints only.', {
      details: [{ issue: 'production_webhooks' }],
    });
  }
}

/** The caller's own sandbox subscription, or 404 (another client's, another environment's, or none). */
async function ownSubscription(db: Database, caller: Caller, subscriptionId: string): Promise<SubscriptionRow> {
  const row = await findOwnedSubscription(db, caller, subscriptionId);
  if (!row) throw notFound('webhook endpoint');
  return row;
}

const recoveryInProgress = () =>
  new PartnerError('conflict', 'A recovery or resend of this endpoint is running right now; read its delivery log in a moment.', { details: [{ issue: 'recovery_in_progress' }] });

/** The webhooks module's refusals speak to administrators; the console answers a partner with the error envelope. */
function asPartnerError(error: unknown): never {
  if (!(error instanceof WebhookError)) throw error;
  switch (error.code) {
    case 'refused_destination':
      throw new PartnerError('invalid_request', `This URL cannot receive webhooks: ${error.reason}.`, {
        details: [{ field: 'url', issue: 'refused_destination', message: error.reason }],
      });
    case 'subscription_disabled':
      throw new PartnerError('conflict', 'This webhook endpoint is disabled.', { details: [{ issue: 'endpoint_disabled' }] });
    case 'subscription_limit':
      throw new PartnerError('conflict', `A sandbox API client can have at most ${MAX_SANDBOX_ENDPOINTS} active webhook endpoints; disable one first.`, {
        details: [{ issue: 'too_many_endpoints' }],
      });
    case 'replay_pending':
      throw new PartnerError('conflict', 'A delivery of this event to this endpoint is still pending; resend it once that one is delivered or dead-lettered.', {
        details: [{ issue: 'replay_pending' }],
      });
    case 'recovery_in_progress':
      throw recoveryInProgress();
    // The console has already found the caller's own endpoint or delivery (404 otherwise): what the
    // webhooks module misses behind it (its API client, a key) is a state the partner must change.
    case 'not_found':
    case 'not_allowed':
      throw new PartnerError('conflict', error.message, { details: [{ issue: 'not_allowed' }] });
  }
}

async function describeEndpoints(db: Database, rows: SubscriptionRow[]): Promise<ConsoleWebhookEndpoint[]> {
  const counts = await deliveryCounts(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((row) => {
    const count = counts.find((c) => c.subscriptionId === row.id);
    return {
      subscription_id: row.id,
      url: row.url,
      event_types: row.eventTypes as EventType[],
      status: row.status,
      created_at: row.createdAt.toISOString(),
      secret_rotated_at: row.secretRotatedAt?.toISOString() ?? null,
      disabled_at: row.disabledAt?.toISOString() ?? null,
      deliveries: {
        delivered: count?.delivered ?? 0,
        pending: count?.pending ?? 0,
        retrying: count?.retrying ?? 0,
        dead_lettered: count?.deadLettered ?? 0,
        recovered: count?.recovered ?? 0,
      },
    };
  });
}

/** The console's key as the actor of an endpoint change, with the request that made it. */
const keyActor = (caller: Caller, requestId?: string): ControlActor => ({ kind: 'key', keyId: caller.keyId, keyPrefix: caller.keyPrefix, door: 'console', requestId });

export async function listWebhookEndpoints(db: Database, caller: Caller): Promise<ConsoleWebhookEndpoint[]> {
  requireSandbox(caller);
  const rows = await subscriptionsOf(db, { laboratoryId: caller.laboratoryId, clientId: caller.clientId, environment: 'sandbox' });
  return describeEndpoints(db, rows);
}

async function endpointOf(db: Database, caller: Caller, subscriptionId: string) {
  return (await describeEndpoints(db, [await ownSubscription(db, caller, subscriptionId)]))[0];
}

/**
 * Registers a sandbox endpoint with the same destination guard (and loopback rule) as the control
 * plane and every delivery attempt. The secret is returned here once.
 */
export async function createWebhookEndpoint(
  db: Database,
  protector: DataProtector,
  caller: Caller,
  input: { url: string; event_types: EventType[] },
  settings: WebhookSelfServiceSettings,
  requestId?: string,
) {
  requireSandbox(caller);
  const created = await createSubscription(
    db,
    protector,
    { clientId: caller.clientId, environment: 'sandbox', url: input.url, eventTypes: [...new Set(input.event_types)], maxActive: MAX_SANDBOX_ENDPOINTS },
    settings.destination,
    keyActor(caller, requestId),
  ).catch(asPartnerError);
  return { ...(await endpointOf(db, caller, created.subscription_id)), secret: created.secret };
}

/** Chooses which event types the endpoint receives from now on (events already emitted are not delivered again). */
export async function updateWebhookEndpoint(db: Database, caller: Caller, subscriptionId: string, input: { event_types: EventType[] }, requestId?: string) {
  requireSandbox(caller);
  const row = await ownSubscription(db, caller, subscriptionId);
  if (row.status !== 'active') asPartnerError(subscriptionDisabled(row.id));
  await setSubscriptionEventTypes(db, row.id, input.event_types, keyActor(caller, requestId));
  return endpointOf(db, caller, row.id);
}

export async function rotateWebhookSecret(db: Database, protector: DataProtector, caller: Caller, subscriptionId: string, requestId?: string) {
  requireSandbox(caller);
  const row = await ownSubscription(db, caller, subscriptionId);
  const rotated = await rotateSubscriptionSecret(db, protector, row.id, keyActor(caller, requestId)).catch((error: unknown) => asPartnerError(error));
  return { ...(await endpointOf(db, caller, row.id)), secret: rotated.secret };
}

export async function disableWebhookEndpoint(db: Database, caller: Caller, subscriptionId: string, requestId?: string) {
  requireSandbox(caller);
  const row = await ownSubscription(db, caller, subscriptionId);
  await disableSubscription(db, row.id, keyActor(caller, requestId));
  return endpointOf(db, caller, row.id);
}

/** Sends a signed test delivery now, from the API process, under the same destination guard. */
export async function sendWebhookTest(
  db: Database,
  protector: DataProtector,
  caller: Caller,
  subscriptionId: string,
  settings: WebhookSelfServiceSettings,
  eventType?: EventType,
): Promise<ConsoleWebhookDelivery> {
  requireSandbox(caller);
  const row = await ownSubscription(db, caller, subscriptionId);
  const sent = await sendTestDelivery(db, protector, row.id, { timeoutMs: settings.attemptTimeoutMs, ...settings.destination }, { type: eventType }).catch((error: unknown) => asPartnerError(error));
  return getWebhookDelivery(db, caller, sent.delivery_id);
}

async function describeDeliveries(db: Database, rows: TenantDeliveryRow[]): Promise<ConsoleWebhookDelivery[]> {
  const ids = rows.map((r) => r.delivery.id);
  const [replays, attempts, recoveries] = await Promise.all([replaysOf(db, ids), attemptsOf(db, ids), recoveriesOf(db, ids)]);
  return rows.map(({ delivery: d, url, eventType }) => {
    const own = attempts.filter((a) => a.deliveryId === d.id);
    const view = describeDelivery(d, own, replays.get(d.id) ?? [], recoveries.get(d.id) ?? null);
    return {
      ...view,
      kind: d.kind as ConsoleWebhookDelivery['kind'],
      event_type: eventType as EventType | null,
      attempts: own.map((a, i) => ({
        ...view.attempts[i],
        request: a.requestHeaders ? { method: 'POST' as const, url, headers: a.requestHeaders, body: a.requestBody } : null,
        response: a.statusCode !== null ? { status: a.statusCode, body_excerpt: excerptText(a.responseBody), truncated: a.responseBodyTruncated } : null,
      })),
    };
  });
}

export async function getWebhookDelivery(db: Database, caller: Caller, deliveryId: string): Promise<ConsoleWebhookDelivery> {
  requireSandbox(caller);
  const rows = await tenantDeliveries(db, caller, { deliveryIds: [deliveryId] });
  if (rows.length === 0) throw notFound('webhook delivery');
  return (await describeDeliveries(db, rows))[0];
}

const invalidCursor = () =>
  new PartnerError('invalid_request', 'The cursor is not valid; use the next_cursor of a previous page, or omit it.', { details: [{ field: 'cursor', issue: 'invalid_cursor' }] });

/** Opaque to the console: the last delivery of a page, bound to the endpoint's delivery log (http/cursor.ts). */
const deliveryCursor = cursorCodec({ purpose: 'partner-service/console-delivery-cursor', version: 1, position: rowIdPosition });
const deliveryLogOf = (caller: Caller, subscriptionId: string) => `${caller.laboratoryId}:${caller.clientId}:${caller.environment}:${subscriptionId}`;

function decodeDeliveryCursor(protector: DataProtector, caller: Caller, subscriptionId: string, cursor: string): string {
  const decoded = deliveryCursor.decode(protector, deliveryLogOf(caller, subscriptionId), cursor);
  if (!decoded.ok) throw invalidCursor();
  return decoded.position;
}

/** The endpoint's delivery log, newest first, page by page; with `delivery_id`, that one delivery of it (a link from elsewhere). */
export async function listWebhookDeliveries(
  db: Database,
  protector: DataProtector,
  caller: Caller,
  input: { subscription_id: string; filter?: DeliveryFilter; cursor?: string; limit?: number; delivery_id?: string },
): Promise<{ deliveries: ConsoleWebhookDelivery[]; next_cursor: string | null }> {
  requireSandbox(caller);
  const subscription = await ownSubscription(db, caller, input.subscription_id);
  if (input.delivery_id !== undefined) {
    const rows = await tenantDeliveries(db, caller, { subscriptionId: subscription.id, deliveryIds: [input.delivery_id], filter: input.filter });
    return { deliveries: await describeDeliveries(db, rows), next_cursor: null };
  }
  const limit = input.limit ?? DELIVERY_PAGE_DEFAULT;
  const afterId = input.cursor === undefined ? undefined : decodeDeliveryCursor(protector, caller, subscription.id, input.cursor);
  if (afterId !== undefined && !(await isDeliveryOf(db, afterId, subscription.id))) throw invalidCursor();
  const rows = await tenantDeliveries(db, caller, { subscriptionId: subscription.id, filter: input.filter, afterId, newestFirst: { limit: limit + 1 } });
  const page = rows.slice(0, limit);
  return { deliveries: await describeDeliveries(db, page), next_cursor: rows.length > limit ? deliveryCursor.encode(protector, deliveryLogOf(caller, subscription.id), page[page.length - 1].delivery.id) : null };
}

const requestedBy = (caller: Caller) => `sandbox console (key ${caller.keyId})`;

/** Delivers the same event again as a new delivery (a replay); the original stays as it was. */
export async function resendWebhookDelivery(db: Database, caller: Caller, deliveryId: string): Promise<ConsoleWebhookDelivery> {
  const original = await getWebhookDelivery(db, caller, deliveryId);
  if (original.kind === 'test') {
    throw new PartnerError('conflict', 'A test delivery is not an event: send a new test event instead.', { details: [{ issue: 'test_delivery' }] });
  }
  if (original.state === 'pending') {
    throw new PartnerError('conflict', 'This delivery is still pending: use “retry now” to attempt it at once, or resend it once it is delivered or dead-lettered.', {
      details: [{ issue: 'delivery_pending' }],
    });
  }
  const replay = await replayDelivery(db, await requireDeliveryQueue(), original.delivery_id, requestedBy(caller)).catch(asPartnerError);
  return getWebhookDelivery(db, caller, replay.delivery_id);
}

/**
 * Attempts a delivery that is waiting for its next retry at once. The waiting job is left in the
 * queue: when it runs, the delivery row shows its attempt was taken, and it does nothing.
 */
export async function retryWebhookDeliveryNow(db: Database, caller: Caller, deliveryId: string): Promise<ConsoleWebhookDelivery> {
  const delivery = await getWebhookDelivery(db, caller, deliveryId);
  if (delivery.state !== 'pending' || delivery.attempts_made === 0) {
    throw new PartnerError(
      'conflict',
      delivery.state === 'pending'
        ? 'This delivery has not been attempted yet; its first attempt is already on its way.'
        : `This delivery is ${delivery.state}; resend it to deliver the event again.`,
      { details: [{ issue: 'not_waiting_for_retry' }] },
    );
  }
  if (delivery.attempts.at(-1)?.outcome === SENDING) {
    throw new PartnerError('conflict', 'An attempt of this delivery is in flight right now; read it again in a moment.', { details: [{ issue: 'attempt_in_flight' }] });
  }
  const queue = await requireDeliveryQueue();
  const moved = await db.transaction(async (tx) => {
    const due = await makeRetryDueNow(tx, delivery.delivery_id, delivery.attempts_made);
    if (due) await queue.enqueue(tx, [{ delivery_id: delivery.delivery_id, attempt: delivery.attempts_made + 1, environment: caller.environment, clientId: caller.clientId }]);
    return due;
  });
  if (!moved) throw new PartnerError('conflict', 'The delivery moved on while you asked (an attempt just ran); read it again.', { details: [{ issue: 'delivery_changed' }] });
  return getWebhookDelivery(db, caller, delivery.delivery_id);
}

/**
 * Svix's "recover" (webhooks/deliveries.ts recoverDeadLetters): one replay per dead-lettered event
 * of the endpoint created since `since`, oldest first, at most RECOVER_MAX_EVENTS per call;
 * `remaining` says how many more a next call would replay, `recently_recovered` how many it left
 * because a recover replayed them moments ago. A concurrent call of the same endpoint is refused
 * with 409 recovery_in_progress.
 */
export async function recoverWebhookDeliveries(db: Database, caller: Caller, subscriptionId: string, since: Date) {
  requireSandbox(caller);
  const subscription = await ownSubscription(db, caller, subscriptionId);
  if (subscription.status !== 'active') asPartnerError(subscriptionDisabled(subscription.id));
  const queue = await requireDeliveryQueue();
  const { replayIds, remaining, settling } = await recoverDeadLetters(db, queue, { subscriptionId: subscription.id, environment: subscription.environment, clientId: subscription.clientId, since, requestedBy: requestedBy(caller) }).catch((error: unknown) => {
    if (error instanceof WebhookError && error.code === 'recovery_in_progress') throw recoveryInProgress();
    throw error;
  });
  const rows = replayIds.length === 0 ? [] : await tenantDeliveries(db, caller, { deliveryIds: replayIds });
  return { subscription_id: subscription.id, since: since.toISOString(), replayed: replayIds.length, remaining, recently_recovered: settling, deliveries: await describeDeliveries(db, rows) };
}

// ---- An endpoint's health ----------------------------------------------------------------------

/** The health view's hours: 24, the last one the current (partial) hour. */
export const HEALTH_HOURS = 24;
/** At most this many attempts are listed behind one hour. */
export const BUCKET_ATTEMPTS_MAX = 100;
const HOUR_MS = 3_600_000;

/** The 24 UTC hours ending with the one `now` is in. */
export function healthWindow(now: number): { from: Date; to: Date } {
  const end = Math.floor(now / HOUR_MS) * HOUR_MS + HOUR_MS;
  return { from: new Date(end - HEALTH_HOURS * HOUR_MS), to: new Date(end) };
}

function describeBucket(b: AttemptBucket, end: Date) {
  const ended = b.succeeded + b.failed;
  return {
    start: b.start.toISOString(),
    end: end.toISOString(),
    attempts: b.attempts,
    succeeded: b.succeeded,
    failed: b.failed,
    in_flight: b.inFlight,
    success_rate: ended === 0 ? null : b.succeeded / ended,
    latency_p50_ms: b.p50Ms,
    latency_p95_ms: b.p95Ms,
  };
}

/**
 * Success rate and latency of one of the caller's endpoints over the last 24 hours, hour by hour
 * (Svix's endpoint statistics): every attempt counts, retries, replays and test events included,
 * since each is a request the endpoint answered (or did not).
 */
export async function getWebhookEndpointHealth(db: Database, caller: Caller, subscriptionId: string, now = Date.now()): Promise<ConsoleWebhookHealth> {
  requireSandbox(caller);
  const subscription = await ownSubscription(db, caller, subscriptionId);
  const window = healthWindow(now);
  const { hours, total } = await attemptBuckets(db, caller, subscription.id, window);
  const byStart = new Map(hours.map((h) => [h.start.getTime(), h]));
  const buckets = Array.from({ length: HEALTH_HOURS }, (_, i) => {
    const start = window.from.getTime() + i * HOUR_MS;
    const hour = byStart.get(start) ?? { start: new Date(start), attempts: 0, succeeded: 0, failed: 0, inFlight: 0, p50Ms: null, p95Ms: null };
    return describeBucket(hour, new Date(start + HOUR_MS));
  });
  return { subscription_id: subscription.id, window_start: window.from.toISOString(), window_end: window.to.toISOString(), totals: describeBucket(total, window.to), buckets };
}

/** The attempts behind one hour of the health view, newest first, each naming its delivery. */
export async function listWebhookBucketAttempts(db: Database, caller: Caller, subscriptionId: string, bucketStart: Date, now = Date.now()) {
  requireSandbox(caller);
  const subscription = await ownSubscription(db, caller, subscriptionId);
  const window = healthWindow(now);
  const start = bucketStart.getTime();
  if (start % HOUR_MS !== 0) {
    throw new PartnerError('invalid_request', 'bucket_start must be the start of an hour (UTC), as the health view gives it.', { details: [{ field: 'bucket_start', issue: 'not_an_hour' }] });
  }
  if (start < window.from.getTime() || start >= window.to.getTime()) {
    throw new PartnerError('invalid_request', `bucket_start must be one of the last ${HEALTH_HOURS} hours: from ${window.from.toISOString()} to ${new Date(window.to.getTime() - HOUR_MS).toISOString()}.`, {
      details: [{ field: 'bucket_start', issue: 'outside_window' }],
    });
  }
  const bucket = { from: new Date(start), to: new Date(start + HOUR_MS) };
  const rows = await attemptsInWindow(db, caller, subscription.id, bucket, BUCKET_ATTEMPTS_MAX + 1);
  return {
    subscription_id: subscription.id,
    bucket_start: bucket.from.toISOString(),
    bucket_end: bucket.to.toISOString(),
    attempts: rows.slice(0, BUCKET_ATTEMPTS_MAX).map((a) => ({
      attempt_id: a.attemptId,
      delivery_id: a.deliveryId,
      attempt: a.attempt,
      kind: a.kind as 'event' | 'replay' | 'test',
      event_type: a.eventType as EventType | null,
      started_at: a.startedAt.toISOString(),
      duration_ms: a.durationMs,
      status_code: a.statusCode,
      error_class: a.errorClass,
      outcome: a.outcome,
    })),
    truncated: rows.length > BUCKET_ATTEMPTS_MAX,
  };
}
