import { randomUUID } from 'node:crypto';
import type { Environment, EventType } from '@lop/contract';
import { sampleEvent } from '../events/sample-events';
import { eventSchema, type PartnerEvent } from '../events/events.schemas';

/**
 * The body of a test delivery: an event envelope of the type asked for, valid against the event
 * schema, so a handler's parsing and routing are exercised as by a real delivery. What marks it
 * as a test (docs/webhooks.md § Test deliveries): the x-partner-test header, `sequence` 0 (no
 * stream position; real ones start at 1) and `external_order_id` `test-delivery`. Its event_id
 * is new and in no stream; its order, program and result ids are the documentation's samples,
 * which name nothing. Its client and environment are the subscription's.
 */
export function testEvent(type: EventType, subscription: { clientId: string; environment: Environment }, now: Date): PartnerEvent {
  const sample = sampleEvent(type, 0);
  return eventSchema.parse({
    ...sample,
    event_id: randomUUID(),
    occurred_at: now.toISOString(),
    environment: subscription.environment,
    sequence: 0,
    data: { ...sample.data, external_order_id: 'test-delivery', client_id: subscription.clientId, environment: subscription.environment },
  });
}
