import { sql } from 'drizzle-orm';
import { boolean, customType, index, integer, jsonb, pgEnum, pgTable, primaryKey, real, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { apiClients } from './clients';
import { createdAt, environmentEnum, id } from './common';
import { laboratories } from './laboratories';

export const webhookSubscriptionStatusEnum = pgEnum('webhook_subscription_status', ['active', 'disabled']);

/**
 * Every state a webhook delivery can be in, declared once: the domain writes these names and the
 * database enum below is made from them. An event delivery goes pending → delivered |
 * dead_lettered | cancelled (its subscription was disabled while it waited); a test delivery
 * (one attempt, never retried) goes pending → delivered | failed.
 */
export const WEBHOOK_DELIVERY_STATES = Object.freeze({
  pending: 'pending',
  delivered: 'delivered',
  deadLettered: 'dead_lettered',
  cancelled: 'cancelled',
  failed: 'failed',
} as const);
export type WebhookDeliveryState = (typeof WEBHOOK_DELIVERY_STATES)[keyof typeof WEBHOOK_DELIVERY_STATES];
export const webhookDeliveryStateEnum = pgEnum('webhook_delivery_state', enumValues(WEBHOOK_DELIVERY_STATES));

/**
 * What one attempt came to: `sending` while its request is out (claimed, not yet completed), then
 * the verdict — delivered, retry (another attempt follows), dead_lettered (the delivery's last);
 * a test delivery's single attempt is delivered or failed.
 */
export const WEBHOOK_ATTEMPT_OUTCOMES = Object.freeze({
  sending: 'sending',
  delivered: 'delivered',
  retry: 'retry',
  deadLettered: 'dead_lettered',
  failed: 'failed',
} as const);
export type WebhookAttemptOutcome = (typeof WEBHOOK_ATTEMPT_OUTCOMES)[keyof typeof WEBHOOK_ATTEMPT_OUTCOMES];
export const webhookAttemptOutcomeEnum = pgEnum('webhook_attempt_outcome', enumValues(WEBHOOK_ATTEMPT_OUTCOMES));

/** A frozen name → value table's values as the non-empty tuple pgEnum takes. */
function enumValues<V extends string>(table: Readonly<Record<string, V>>): [V, ...V[]] {
  return Object.values(table) as [V, ...V[]];
}

/**
 * A partner's HTTPS endpoint for one API client and one environment. The signing secret is kept
 * only encrypted (AES-256-GCM, by the domain's DataProtector); it is shown once, at creation or
 * rotation, and replaced (never versioned) on rotation so the old secret stops working at once.
 */
export const webhookSubscriptions = pgTable(
  'webhook_subscriptions',
  {
    id: id(),
    laboratoryId: uuid('laboratory_id')
      .notNull()
      .references(() => laboratories.id),
    clientId: uuid('client_id')
      .notNull()
      .references(() => apiClients.id),
    environment: environmentEnum('environment').notNull(),
    url: text('url').notNull(),
    eventTypes: text('event_types').array().notNull(),
    secretProtected: text('secret_protected').notNull(),
    status: webhookSubscriptionStatusEnum('status').notNull().default('active'),
    createdAt: createdAt(),
    secretRotatedAt: timestamp('secret_rotated_at', { withTimezone: true }),
    disabledAt: timestamp('disabled_at', { withTimezone: true }),
  },
  (t) => [index('webhook_subscriptions_stream_idx').on(t.clientId, t.environment).where(sql`status = 'active'`)],
);

/**
 * One delivery = one attempt chain of one event (or a control-plane test) to one subscription.
 * The row is the truth about the delivery; pg-boss jobs only wake a worker for its next attempt.
 * state: WEBHOOK_DELIVERY_STATES.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    // Unique with created_at, the partition key (see below): ids are random UUIDs, never reused.
    id: uuid('id').notNull().defaultRandom(),
    // No foreign keys on the partitioned table (0021 says why): its legacy partition keeps the key
    // to webhook_subscriptions it had. None to events since 0016: events is partitioned (0019), and
    // a key can reference a partitioned table only by a unique key that includes its partition key.
    // The delivery is written in the transaction that appends its event (webhooks/outbox.ts).
    subscriptionId: uuid('subscription_id').notNull(),
    eventId: uuid('event_id'),
    kind: text('kind').notNull(),
    replayOf: uuid('replay_of'),
    requestedBy: text('requested_by'),
    state: webhookDeliveryStateEnum('state').notNull().default(WEBHOOK_DELIVERY_STATES.pending),
    failureReason: text('failure_reason'),
    attemptsMade: integer('attempts_made').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
    lastStatusCode: integer('last_status_code'),
    lastErrorClass: text('last_error_class'),
    // W3C traceparent of the request (or operation) whose transaction wrote the event, when tracing
    // was on there: every attempt of this delivery is a span in that trace, however much later it runs.
    traceparent: text('traceparent'),
    createdAt: createdAt(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    /** A dead letter whose event a recover call has replayed: never a candidate of another recover. */
    recoveredAt: timestamp('recovered_at', { withTimezone: true }),
  },
  // Range-partitioned by created_at, weekly (migrations 0021-0022; not expressible here): retention
  // drops a week whose deliveries are all finished past the window (retention.ts). A partitioned
  // table's unique keys include the partition key.
  (t) => [
    primaryKey({ name: 'webhook_deliveries_pkey', columns: [t.id, t.createdAt] }),
    // At most one original delivery per (event, subscription); replays are separate rows. With the
    // partition key: the outbox writes an event's deliveries in the statement that numbers it, so
    // they share one created_at, and an event is appended once.
    uniqueIndex('webhook_deliveries_event_subscription_idx').on(t.eventId, t.subscriptionId, t.createdAt).where(sql`kind = 'event'`),
    index('webhook_deliveries_subscription_idx').on(t.subscriptionId, t.createdAt),
    // Every delivery of one event to one endpoint, replays included: recover asks, per dead letter,
    // whether that event is pending or delivered there (10,000 dead letters in milliseconds, not a scan each).
    index('webhook_deliveries_subscription_event_idx').on(t.subscriptionId, t.eventId),
    index('webhook_deliveries_dead_idx').on(t.createdAt).where(sql`state = 'dead_lettered'`),
    // The retention pass finds finished deliveries past their window without reading the pending ones.
    index('webhook_deliveries_completed_idx').on(t.completedAt).where(sql`state <> 'pending'`),
    // The backlog gauge (due, scheduled, oldest due) reads only what waits, however long the history.
    index('webhook_deliveries_pending_idx').on(sql`coalesce(${t.nextAttemptAt}, ${t.createdAt})`).where(sql`state = 'pending'`),
    // A delivery's view lists its replays: one lookup, not a scan of the history.
    index('webhook_deliveries_replay_of_idx').on(t.replayOf).where(sql`replay_of is not null`),
  ],
);

/** Raw bytes (bytea): what a receiver answered, whatever it is (NUL bytes, invalid UTF-8). */
const bytes = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

/**
 * Every attempt, as it happened, with what a partner needs to diagnose it (the sandbox console
 * shows it): the request headers as sent (the signature header included; never the signing
 * secret), the exact body signed and sent, and the first 2 KB of the receiver's answer.
 * An attempt is written before its request leaves (outcome `sending`, until `in_flight_until`)
 * and completed after it (libs/domain/src/webhooks/delivery-store.ts), so a worker killed
 * mid-attempt still leaves the attempt in the log.
 */
export const webhookDeliveryAttempts = pgTable(
  'webhook_delivery_attempts',
  {
    id: uuid('id').notNull().defaultRandom(),
    // No foreign key: webhook_deliveries is partitioned (by created_at), and a key referencing it
    // would need the partition key too. The delivery store writes an attempt only from its
    // delivery's claim, and retention drops attempts with or before their delivery (migration 0020).
    deliveryId: uuid('delivery_id').notNull(),
    attemptNumber: integer('attempt_number').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull(),
    /** Null while the attempt is in flight, and for one whose worker stopped before it ended. */
    durationMs: integer('duration_ms'),
    statusCode: integer('status_code'),
    errorClass: text('error_class'),
    outcome: webhookAttemptOutcomeEnum('outcome').notNull(),
    retryAfterSeconds: real('retry_after_seconds'),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
    destinationAddress: text('destination_address'),
    /** Null for attempts recorded before these columns existed, and when the guard refused the destination before any request. */
    requestHeaders: jsonb('request_headers').$type<Record<string, string>>(),
    requestBody: text('request_body'),
    /** At most the first 2048 bytes of the receiver's body, as received. */
    responseBody: bytes('response_body'),
    responseBodyTruncated: boolean('response_body_truncated'),
    /** While the outcome is `sending`: when a worker may take the attempt as abandoned (its job's expiry). */
    inFlightUntil: timestamp('in_flight_until', { withTimezone: true }),
  },
  // Range-partitioned by started_at, weekly (migrations 0021, 0023). Attempt n of a delivery is
  // written once because its claim moves the delivery's attempts_made from n-1 to n (claimAttempt);
  // the unique index includes the partition key, as it must.
  (t) => [
    primaryKey({ name: 'webhook_delivery_attempts_pkey', columns: [t.id, t.startedAt] }),
    uniqueIndex('webhook_delivery_attempts_number_idx').on(t.deliveryId, t.attemptNumber, t.startedAt),
  ],
);
