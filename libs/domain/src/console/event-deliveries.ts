import type { EventType } from '@lop/contract';
import { and, eq, inArray } from 'drizzle-orm';
import { events, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { attemptsOf, deliveriesOfEvents, recoveriesOf } from '../webhooks/delivery-store';
import { describeDelivery } from '../webhooks/delivery-view';
import { subscriptionsOf } from '../webhooks/subscriptions';
import type { ConsoleEventDeliveries } from './console.schemas';

/**
 * The console's view of webhook deliveries: for some of the caller's events, every delivery to
 * the caller's own subscriptions with its attempts. Filtered by laboratory, client and
 * environment; another tenant's event ids simply match nothing. Signing secrets and receiver
 * bodies are never read; the resolved addresses the shared view carries are left out by this
 * route's output schema (consoleDeliverySchema).
 */
export async function listConsoleEventDeliveries(db: Database, caller: Caller, eventIds: string[]): Promise<ConsoleEventDeliveries> {
  const subscriptions = await subscriptionsOf(db, caller, 'oldest');

  const ownEvents =
    eventIds.length === 0 || subscriptions.length === 0
      ? []
      : await db
          .select({ id: events.id, type: events.type, createdAt: events.createdAt })
          .from(events)
          .where(and(inArray(events.id, eventIds), eq(events.clientId, caller.clientId), eq(events.environment, caller.environment)));

  const deliveries = await deliveriesOfEvents(
    db,
    ownEvents.map((e) => e.id),
    subscriptions.map((s) => s.id),
  );
  const ids = deliveries.map((d) => d.id);
  const [attempts, recoveries] = await Promise.all([attemptsOf(db, ids), recoveriesOf(db, ids)]);

  const delivered = new Set(deliveries.map((d) => d.eventId));
  const undelivered = ownEvents
    .filter((e) => !delivered.has(e.id))
    .map((e) => {
      // Deliveries are created when the event is appended (events.created_at), for the endpoints active then.
      const covering = subscriptions.filter((s) => s.eventTypes.includes(e.type));
      const since = covering.length === 0 ? null : new Date(Math.min(...covering.map((s) => s.createdAt.getTime())));
      const existing = covering.filter((s) => s.createdAt <= e.createdAt);
      const reason =
        covering.length === 0
          ? ('type_not_subscribed' as const)
          : existing.length === 0
            ? ('before_subscription' as const)
            : existing.every((s) => s.disabledAt !== null && s.disabledAt <= e.createdAt)
              ? ('subscription_disabled' as const)
              : ('not_subscribed_then' as const);
      return { event_id: e.id, reason, subscribed_since: since?.toISOString() ?? null };
    });

  return {
    undelivered,
    subscriptions: subscriptions.map((s) => ({
      subscription_id: s.id,
      url: s.url,
      event_types: s.eventTypes as EventType[],
      status: s.status,
      created_at: s.createdAt.toISOString(),
    })),
    // The shared view (webhooks/delivery-view.ts); the output schema keeps the fields this one documents.
    deliveries: deliveries.map((d) => ({
      ...describeDelivery(
        d,
        attempts.filter((a) => a.deliveryId === d.id),
        [],
        recoveries.get(d.id) ?? null,
      ),
      event_id: d.eventId!,
    })),
  };
}
