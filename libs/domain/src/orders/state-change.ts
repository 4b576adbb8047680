import { LIFECYCLE_DETAILS, type LifecycleDetail } from '@lop/contract';
import { and, eq, sql } from 'drizzle-orm';
import { orders, type Transaction } from '@lop/db';
import type { EventDraft } from '../events/append';
import { appendEvents } from '../webhooks/outbox';
import type { EventData } from '../events/events.schemas';
import { settleOpenExceptions, type ExceptionSettlement } from '../exceptions/resolution';
import { nextState, orderEventFor, type Transition } from './lifecycle';
import { orderProgramGranted } from '../programs/programs';
import { actionRequiredData, orderEventData } from './order-events';
import type { OrderRow } from './order-resource';

/**
 * Locks the order row for the rest of the transaction, so two changes never interleave. With a
 * caller's scope, only an order the caller may see: its laboratory, client and environment, and
 * a program still granted (programs.ts, orderProgramGranted).
 */
export async function lockOrder(tx: Transaction, orderId: string, scope?: { clientId: string; environment: string; laboratoryId: string }): Promise<OrderRow | null> {
  const [row] = await tx
    .select()
    .from(orders)
    .where(
      and(
        eq(orders.id, orderId),
        ...(scope
          ? [eq(orders.clientId, scope.clientId), sql`${orders.environment} = ${scope.environment}`, eq(orders.laboratoryId, scope.laboratoryId), orderProgramGranted()]
          : []),
      ),
    )
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
  /** Open exceptions this change settles, e.g. the transmission_failed a retransmission retries. */
  settles?: ExceptionSettlement;
}

const CLOSED: ExceptionSettlement = { resolution: 'The order was cancelled.' };

/**
 * Applies one transition from the table in lifecycle.ts and emits its events, all in the
 * caller's transaction. IllegalTransitionError leaves everything unchanged.
 *
 * Events tell the partner only what their payload can show (orderEventFor): order.cancelled on
 * cancellation, order.updated when lifecycle or next_action changes — and order.updated also when
 * settling exceptions changed what the partner must act on, carrying `action_required_code`
 * (what is left, or `none`), so a reader of the stream alone sees `action_required` clear.
 * Cancelling settles every open exception: a closed order leaves nothing to act on.
 */
export async function changeOrderState(tx: Transaction, order: OrderRow, transition: Transition, change: StateChange = {}, now = new Date()): Promise<OrderRow> {
  const current = order.lifecycleDetail as LifecycleDetail;
  const next = nextState(current, transition);
  const [updated] = await tx
    .update(orders)
    .set({ ...change.patch, lifecycleDetail: next, updatedAt: now })
    .where(eq(orders.id, order.id))
    .returning();
  const settlement = LIFECYCLE_DETAILS[next].lifecycle === 'cancelled' ? CLOSED : change.settles;
  const changed = settlement ? await settleOpenExceptions(tx, order.id, settlement, now) : null;
  const actionRequired = changed ? actionRequiredData(order.id, changed) : null;
  const drafts: EventDraft[] = [...(change.events?.(updated) ?? [])];
  const type = orderEventFor(current, next, drafts.map((d) => d.type)) ?? (actionRequired ? 'order.updated' : null);
  if (type) drafts.push(orderEvent(updated, type, change.occurredAt ?? now, actionRequired ?? {}));
  await appendEvents(tx, { clientId: updated.clientId, environment: updated.environment }, drafts);
  return updated;
}

export function orderEvent(order: OrderRow, type: EventDraft['type'], occurredAt: Date, extra: Partial<EventData> = {}): EventDraft {
  return { type, occurredAt, programId: order.programId, orderId: order.id, data: orderEventData(order, extra) };
}
