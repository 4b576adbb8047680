import type { Transaction } from '@lop/db';
import { appendEventsThrough, type EventDraft, type EventOutbox, type OutboxEvent, type Stream } from '../events/append';
import type { PartnerEvent } from '../events/events.schemas';
import { activeTraceparent } from '../telemetry/tracing';
import { deferEventCheck, insertEventDeliveries } from './delivery-store';
import type { DeliveryQueue } from './delivery-queue';

/**
 * The webhook side of the transactional outbox, and the one way to append events: appendEvents
 * writes the events and, in the same transaction, one delivery row and one pg-boss job per
 * (event, matching active subscription), so the events, their deliveries and the jobs that wake a
 * worker commit or roll back together. Nothing can commit an event and lose its delivery: the
 * events module takes the outbox as an argument (EventOutbox), and outside tests this is the only
 * place that passes one: a process cannot append without fanning out.
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
const webhookOutbox: EventOutbox = {
  mayPrecedeEvents: deferEventCheck,
  async write(tx: Transaction, stream: Stream, events: OutboxEvent[]): Promise<void> {
    if (events.length === 0) return;
    // The trace of the request (or operation) writing these events, when it is traced: each attempt
    // of these deliveries becomes a span of that trace (process-delivery.ts).
    const deliveryIds = await insertEventDeliveries(tx, stream, events, activeTraceparent());
    if (deliveryIds.length === 0) return;
    await (await requireDeliveryQueue()).enqueue(
      tx,
      deliveryIds.map((id) => ({ delivery_id: id, attempt: 1, environment: stream.environment, clientId: stream.clientId })),
    );
  },
};

/**
 * Appends events to a client's stream inside the caller's transaction, with their webhook
 * deliveries (events/append.ts appendEventsThrough says how the stream is written).
 */
export function appendEvents(tx: Transaction, stream: Stream, drafts: EventDraft[]): Promise<PartnerEvent[]> {
  return appendEventsThrough(webhookOutbox, tx, stream, drafts);
}
