import { and, eq, sql } from 'drizzle-orm';
import { orders, type Transaction } from '@lop/db';
import { appendEvents, type EventDraft } from '../events/append';
import type { EventData } from '../events/events.schemas';
import { LIFECYCLE_DETAILS, nextState, type LifecycleDetail, type Transition } from './lifecycle';
import { orderEventData } from './order-events';
import type { OrderRow } from './order-resource';

/** Locks the order row for the rest of the transaction, so two changes never interleave. */
export async function lockOrder(tx: Transaction, orderId: string, scope?: { clientId: string; environment: string }): Promise<OrderRow | null> {
  const [row] = await tx
    .select()
    .from(orders)
    .where(and(eq(orders.id, orderId), ...(scope ? [eq(orders.clientId, scope.clientId), sql`${orders.environment} = ${scope.environment}`] : [])))
    .for('update');
  return row ?? null;
}

export interface StateChange {
  /** Column updates that accompany the transition (timestamps, references). */
  patch?: Partial<typeof orders.$inferInsert>;
  /** Events besides the order.updated/order.cancelled this change implies, e.g. specimen.updated. */
  events?: (order: OrderRow) => EventDraft[];
  /**
   * When the fact behind the change happened, if the laboratory reported its time (a specimen's
   * collected_at): the occurred_at of the order event. Default: `now`, when it is recorded.
   */
  occurredAt?: Date;
}

/**
 * Applies one transition from the table in lifecycle.ts and emits its events, all in the
 * caller's transaction. A lifecycle change emits order.updated, or order.cancelled for a
 * cancellation. IllegalTransitionError leaves everything unchanged.
 */
export async function changeOrderState(tx: Transaction, order: OrderRow, transition: Transition, change: StateChange = {}, now = new Date()): Promise<OrderRow> {
  const current = order.lifecycleDetail as LifecycleDetail;
  const next = nextState(current, transition);
  const [updated] = await tx
    .update(orders)
    .set({ ...change.patch, lifecycleDetail: next, updatedAt: now })
    .where(eq(orders.id, order.id))
    .returning();
  const drafts: EventDraft[] = [...(change.events?.(updated) ?? [])];
  if (next !== current) {
    const cancelled = LIFECYCLE_DETAILS[next].lifecycle === 'cancelled';
    drafts.push(orderEvent(updated, cancelled ? 'order.cancelled' : 'order.updated', change.occurredAt ?? now));
  }
  await appendEvents(tx, { clientId: updated.clientId, environment: updated.environment }, drafts);
  return updated;
}

export function orderEvent(order: OrderRow, type: EventDraft['type'], occurredAt: Date, extra: Partial<EventData> = {}): EventDraft {
  return { type, occurredAt, programId: order.programId, orderId: order.id, data: orderEventData(order, extra) };
}
