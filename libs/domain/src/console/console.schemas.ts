import { z } from 'zod';
import { environmentSchema, scopeSchema } from '../auth/scopes';
import { timestampSchema } from '../common-schemas';
import { eventTypeSchema } from '../events/events.schemas';
import { lifecycleDetailSchema } from '../orders/lifecycle';
import { orderSchema } from '../orders/orders.schemas';

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
  duration_ms: z.number().int(),
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
  state: z.string().meta({ description: 'pending, delivered, dead_lettered or cancelled.' }),
  failure_reason: z.string().nullable(),
  attempts_made: z.number().int(),
  next_attempt_at: timestampSchema.nullable(),
  last_status_code: z.number().int().nullable(),
  last_error_class: z.string().nullable(),
  created_at: timestampSchema,
  completed_at: timestampSchema.nullable(),
  attempts: z.array(consoleDeliveryAttemptSchema),
});

export const consoleSubscriptionSchema = z.object({
  subscription_id: z.uuid(),
  url: z.string(),
  event_types: z.array(eventTypeSchema),
  status: z.enum(['active', 'disabled']),
  created_at: timestampSchema,
});

export const consoleEventDeliveriesSchema = z.object({
  subscriptions: z.array(consoleSubscriptionSchema),
  deliveries: z.array(consoleDeliverySchema),
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
