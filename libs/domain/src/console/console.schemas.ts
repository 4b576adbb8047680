import { environmentSchema, eventTypeSchema, lifecycleDetailSchema, scopeSchema } from '@lop/contract';
import { z } from 'zod';
import { timestampSchema } from '../common-schemas';
import { orderSchema } from '../orders/orders.schemas';
import { RECOVER_SETTLE_SECONDS } from '../webhooks/deliveries';

/**
 * Read models only the sandbox console uses (tRPC, no REST route, not in the OpenAPI document).
 * They reuse the partner shapes and add what a person needs to read a list at a glance.
 */

export const consoleOrderSchema = orderSchema.extend({
  program_name: z.string(),
  item_name: z.string(),
  item_code: z.string(),
  critical_result: z.boolean().meta({ description: 'The current released result version is flagged critical.' }),
});

export const consoleOrderPageSchema = z.object({
  orders: z.array(consoleOrderSchema),
  next_cursor: z.string().nullable(),
});
export type ConsoleOrderPage = z.infer<typeof consoleOrderPageSchema>;

export const consoleDeliveryAttemptSchema = z.object({
  attempt: z.number().int(),
  started_at: timestampSchema,
  duration_ms: z.number().int().nullable().meta({ description: 'Null while the attempt is in flight (outcome `sending`) and for an attempt whose worker stopped mid-attempt (error_class `interrupted`).' }),
  status_code: z.number().int().nullable(),
  error_class: z.string().nullable(),
  outcome: z.string(),
  next_attempt_at: timestampSchema.nullable(),
});

export const consoleDeliverySchema = z.object({
  delivery_id: z.uuid(),
  event_id: z.uuid(),
  subscription_id: z.uuid(),
  kind: z.string().meta({ description: '`event` for the original delivery, `replay` for an operator replay.' }),
  replay_of: z.uuid().nullable(),
  state: z.string().meta({ description: 'pending (held when failure_reason is `no_active_key`), delivered, dead_lettered or cancelled.' }),
  failure_reason: z.string().nullable().meta({ description: 'Why the delivery is where it is: for a dead letter `exhausted` or `permanent`; for a cancelled one `subscription_disabled`, or `program_revoked` (the order\'s program was withdrawn from the client before the event was sent); for a pending one `no_active_key` while it is held (the client has no active API key in this environment; it resumes when one is active again). Null otherwise.' }),
  attempts_made: z.number().int(),
  next_attempt_at: timestampSchema.nullable(),
  last_status_code: z.number().int().nullable(),
  last_error_class: z.string().nullable(),
  created_at: timestampSchema,
  completed_at: timestampSchema.nullable(),
  recovered_at: timestampSchema.nullable().meta({ description: 'For a dead letter: when its event was replayed (by recover or a resend). Null otherwise.' }),
  recovered_by: z.uuid().nullable().meta({ description: 'The replay that recovered this dead letter. Null when not recovered.' }),
  attempts: z.array(consoleDeliveryAttemptSchema),
});

export const consoleSubscriptionSchema = z.object({
  subscription_id: z.uuid(),
  url: z.string(),
  event_types: z.array(eventTypeSchema),
  status: z.enum(['active', 'disabled']),
  created_at: timestampSchema,
});

export const consoleUndeliveredEventSchema = z.object({
  event_id: z.uuid(),
  reason: z.enum(['before_subscription', 'type_not_subscribed', 'subscription_disabled', 'not_subscribed_then']).meta({
    description:
      '`before_subscription`: every endpoint that takes this type was registered after the event. `type_not_subscribed`: no endpoint takes this type. `subscription_disabled`: the endpoints that take it were disabled when it happened. `not_subscribed_then`: the type was added to an endpoint after the event.',
  }),
  subscribed_since: timestampSchema.nullable().meta({ description: 'When the earliest endpoint that takes this type was registered.' }),
});

export const consoleEventDeliveriesSchema = z.object({
  subscriptions: z.array(consoleSubscriptionSchema),
  deliveries: z.array(consoleDeliverySchema),
  /** Events with no delivery, and why: a reader should never guess. */
  undelivered: z.array(consoleUndeliveredEventSchema),
});
export type ConsoleEventDeliveries = z.infer<typeof consoleEventDeliveriesSchema>;

export const consoleSessionSchema = z.object({
  key_id: z.uuid(),
  key_prefix: z.string().meta({ description: 'The first characters of the key, enough to recognise it; the key itself is never returned.' }),
  environment: environmentSchema,
  scopes: z.array(scopeSchema),
  missing_scopes: z.array(scopeSchema).meta({ description: 'Scopes this key does not carry: the console disables what needs them, and says why.' }),
  expires_at: timestampSchema.nullable(),
  created_at: timestampSchema,
  client_id: z.uuid(),
  client_name: z.string(),
});
export type ConsoleSession = z.infer<typeof consoleSessionSchema>;

export const consoleScenarioStepSchema = z.object({
  step: z.number().int().min(1),
  name: z.string(),
  description: z.string(),
  requires_lifecycle_detail: lifecycleDetailSchema,
  leads_to: lifecycleDetailSchema,
  events: z.array(eventTypeSchema),
  applied: z.boolean(),
});

export const consoleOrderScenarioSchema = z.object({
  scenario: z.string(),
  description: z.string(),
  steps: z.number().int(),
  steps_applied: z.number().int().meta({ description: 'Steps of this scenario already applied to the order, by any tab or client: the server keeps the count.' }),
  status: z.enum(['not_started', 'in_progress', 'completed']),
  available: z.boolean().meta({ description: 'Whether the next step can run from the order’s current state.' }),
  refusal: z.string().nullable().meta({ description: 'Why not, when not available (the same sentence simulate would answer with).' }),
  last_applied_at: timestampSchema.nullable(),
  step_details: z.array(consoleScenarioStepSchema),
});

export const consoleOrderScenariosSchema = z.object({
  order_id: z.uuid(),
  lifecycle_detail: lifecycleDetailSchema,
  scenarios: z.array(consoleOrderScenarioSchema),
});
export type ConsoleOrderScenarios = z.infer<typeof consoleOrderScenariosSchema>;

/** A sandbox webhook endpoint as the console manages it (a webhook subscription; never its secret). */
export const consoleWebhookEndpointSchema = z.object({
  subscription_id: z.uuid(),
  url: z.string(),
  event_types: z.array(eventTypeSchema),
  status: z.enum(['active', 'disabled']),
  created_at: timestampSchema,
  secret_rotated_at: timestampSchema.nullable(),
  disabled_at: timestampSchema.nullable(),
  deliveries: z.object({
    delivered: z.number().int(),
    pending: z.number().int().meta({ description: 'Not attempted yet, or waiting for a retry after a failed attempt.' }),
    retrying: z.number().int().meta({ description: 'Pending after at least one failed attempt.' }),
    dead_lettered: z.number().int().meta({ description: 'Dead letters not recovered yet: their event has not been replayed (recover, resend).' }),
    recovered: z.number().int().meta({ description: 'Dead letters whose event was replayed (each links to its replay, `recovered_by`).' }),
  }),
});
export type ConsoleWebhookEndpoint = z.infer<typeof consoleWebhookEndpointSchema>;

/** Returned only by create and rotate: the signing secret, shown this once. */
export const consoleWebhookEndpointWithSecretSchema = consoleWebhookEndpointSchema.extend({
  secret: z.string().meta({ description: 'The signing secret; it is stored only encrypted and cannot be shown again.' }),
});

export const consoleWebhookAttemptSchema = z.object({
  attempt: z.number().int(),
  attempt_id: z.uuid().meta({ description: 'The x-partner-delivery-id this attempt was sent with.' }),
  started_at: timestampSchema,
  duration_ms: z.number().int().nullable().meta({ description: 'Null while the attempt is in flight (outcome `sending`) and for an attempt whose worker stopped mid-attempt (error_class `interrupted`).' }),
  outcome: z.string(),
  error_class: z.string().nullable(),
  next_attempt_at: timestampSchema.nullable(),
  retry_after_seconds: z.number().nullable(),
  request: z
    .object({ method: z.literal('POST'), url: z.string(), headers: z.record(z.string(), z.string()), body: z.string().nullable() })
    .nullable()
    .meta({ description: 'Null when no request was made (the destination was refused) or for attempts recorded before requests were kept.' }),
  response: z
    .object({
      status: z.number().int(),
      body_excerpt: z.string().nullable().meta({ description: "The first 2 KB of the receiver's body, decoded as UTF-8 (an invalid sequence shows as U+FFFD)." }),
      truncated: z.boolean().nullable(),
    })
    .nullable()
    .meta({ description: 'Null when the receiver did not answer (timeout, network error).' }),
});

export const consoleWebhookDeliverySchema = z.object({
  delivery_id: z.uuid(),
  subscription_id: z.uuid(),
  kind: z.enum(['event', 'replay', 'test']),
  event_id: z.uuid().nullable(),
  event_type: eventTypeSchema.nullable(),
  replay_of: z.uuid().nullable(),
  replayed_by: z.array(z.uuid()).meta({ description: 'The replays of this delivery, oldest first: where a dead letter went next.' }),
  recovered_at: timestampSchema.nullable().meta({ description: 'For a dead letter: when its event was replayed (by recover or a resend); recover does not take it again. Null otherwise.' }),
  recovered_by: z.uuid().nullable().meta({ description: 'The replay that recovered this dead letter (recover replays an event once for all its dead letters). Null when not recovered.' }),
  state: z.string().meta({ description: 'pending (held when failure_reason is `no_active_key`), delivered, dead_lettered, cancelled; a test delivery is delivered or failed.' }),
  failure_reason: z.string().nullable().meta({ description: 'Why the delivery is where it is: for a dead letter `exhausted` or `permanent`; for a cancelled one `subscription_disabled`, or `program_revoked` (the order\'s program was withdrawn from the client before the event was sent); for a pending one `no_active_key` while it is held (the client has no active API key in this environment; it resumes when one is active again). Null otherwise.' }),
  attempts_made: z.number().int(),
  next_attempt_at: timestampSchema.nullable(),
  last_status_code: z.number().int().nullable(),
  created_at: timestampSchema,
  completed_at: timestampSchema.nullable(),
  attempts: z.array(consoleWebhookAttemptSchema),
});
export type ConsoleWebhookDelivery = z.infer<typeof consoleWebhookDeliverySchema>;

export const consoleWebhookDeliveryPageSchema = z.object({
  deliveries: z.array(consoleWebhookDeliverySchema),
  next_cursor: z.string().nullable(),
});

export const consoleWebhookRecoverySchema = z.object({
  subscription_id: z.uuid(),
  since: timestampSchema,
  replayed: z.number().int().meta({ description: 'Events replayed by this call (one new delivery each), at most 1,000.' }),
  remaining: z.number().int().meta({ description: 'Events with a dead letter since `since` that this call left for a next one (over the per-call maximum).' }),
  recently_recovered: z.number().int().meta({ description: `Events with a dead letter since \`since\` left alone because a recover replayed them less than ${RECOVER_SETTLE_SECONDS} seconds ago (a double click, two tabs), even if that replay has died already; recover again after that to retry them.` }),
  deliveries: z.array(consoleWebhookDeliverySchema),
});

/** One hour of an endpoint's attempts (or the whole window, for `totals`). */
export const consoleWebhookHealthBucketSchema = z.object({
  start: timestampSchema,
  end: timestampSchema,
  attempts: z.number().int(),
  succeeded: z.number().int().meta({ description: 'Attempts your endpoint answered with a 2xx.' }),
  failed: z.number().int().meta({ description: 'Attempts that failed: any other answer, no answer, a refused destination, or cut off; whether or not a retry followed.' }),
  in_flight: z.number().int().meta({ description: 'Attempts sent and not answered yet.' }),
  success_rate: z.number().nullable().meta({ description: 'succeeded ÷ (succeeded + failed), 0 to 1; null when no attempt ended.' }),
  latency_p50_ms: z.number().int().nullable().meta({ description: 'Median duration of the attempts that ended; null without any.' }),
  latency_p95_ms: z.number().int().nullable().meta({ description: '95th percentile duration of the attempts that ended; null without any.' }),
});

export const consoleWebhookHealthSchema = z.object({
  subscription_id: z.uuid(),
  window_start: timestampSchema,
  window_end: timestampSchema,
  totals: consoleWebhookHealthBucketSchema,
  buckets: z.array(consoleWebhookHealthBucketSchema).meta({ description: 'The 24 UTC hours ending with the current one, oldest first; an hour without attempts has zeros.' }),
});
export type ConsoleWebhookHealth = z.infer<typeof consoleWebhookHealthSchema>;

export const consoleWebhookBucketAttemptsSchema = z.object({
  subscription_id: z.uuid(),
  bucket_start: timestampSchema,
  bucket_end: timestampSchema,
  attempts: z.array(
    z.object({
      attempt_id: z.uuid(),
      delivery_id: z.uuid(),
      attempt: z.number().int(),
      kind: z.enum(['event', 'replay', 'test']),
      event_type: eventTypeSchema.nullable(),
      started_at: timestampSchema,
      duration_ms: z.number().int().nullable(),
      status_code: z.number().int().nullable(),
      error_class: z.string().nullable(),
      outcome: z.string(),
    }),
  ).meta({ description: 'Newest first, at most 100.' }),
  truncated: z.boolean().meta({ description: 'True when the hour has more attempts than listed.' }),
});
