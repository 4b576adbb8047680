import { sqlOf, type Transaction } from '@lop/db';
import type { Stream } from '../events/append';
import type { PartnerEvent } from '../events/events.schemas';
import { activeTraceparent } from '../telemetry/tracing';
import type { DeliveryQueue } from './delivery-queue';

/**
 * The webhook side of the transactional outbox. appendEvents calls this in the transaction that
 * writes the events: one delivery row and one pg-boss job per (event, matching active
 * subscription), so the events, their deliveries and the jobs that wake a worker commit or roll
 * back together. Nothing can commit an event and lose its delivery.
 */

/** A started queue, or a way to start one when first needed (short-lived processes such as the admin CLI). */
export type DeliveryQueueSource = DeliveryQueue | (() => Promise<DeliveryQueue>);

let attached: DeliveryQueueSource | null = null;

/**
 * Makes this process able to enqueue deliveries (API replicas, the admin CLI, tests). Returns the
 * detach function. Without a queue attached, a transaction whose events match a subscription
 * fails rather than commit events whose deliveries would never be scheduled.
 */
export function attachDeliveryQueue(source: DeliveryQueueSource): () => void {
  attached = source;
  return () => {
    if (attached === source) attached = null;
  };
}

export class DeliveryQueueMissingError extends Error {
  override name = 'DeliveryQueueMissingError';
}

export async function requireDeliveryQueue(): Promise<DeliveryQueue> {
  if (!attached) {
    throw new DeliveryQueueMissingError('webhook deliveries must be enqueued but this process has no delivery queue attached (attachDeliveryQueue)');
  }
  return typeof attached === 'function' ? attached() : attached;
}

/** Records and enqueues the deliveries of freshly appended events; a no-op when nothing subscribes. */
export async function enqueueWebhookDeliveries(tx: Transaction, stream: Stream, appended: PartnerEvent[]): Promise<void> {
  if (appended.length === 0) return;
  const events = JSON.stringify(appended.map((e) => ({ id: e.event_id, type: e.type, sequence: e.sequence })));
  const client = sqlOf(tx);
  // The trace of the request (or operation) writing these events, when it is traced: each attempt
  // of these deliveries becomes a span of that trace (process-delivery.ts).
  const traceparent = activeTraceparent();
  const rows = await client<{ id: string }[]>`
    insert into webhook_deliveries (subscription_id, event_id, kind, state, next_attempt_at, traceparent)
    select s.id, e.id, 'event', 'pending', now(), ${traceparent}::text
    from jsonb_to_recordset(${events}::jsonb) as e(id uuid, type text, sequence bigint)
    join webhook_subscriptions s on e.type = any(s.event_types)
    where s.client_id = ${stream.clientId} and s.environment = ${stream.environment} and s.status = 'active'
    order by e.sequence, s.id
    returning id`;
  if (rows.length === 0) return;
  await (await requireDeliveryQueue()).enqueue(
    tx,
    rows.map((row) => ({ delivery_id: row.id, attempt: 1, environment: stream.environment, clientId: stream.clientId })),
  );
}
