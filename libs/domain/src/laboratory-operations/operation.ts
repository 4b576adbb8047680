import type { EventType } from '@lop/contract';
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import { events, orders, type Database, type Transaction } from '@lop/db';
import { orderResource, type OrderRow } from '../orders/order-resource';
import type { Order } from '../orders/orders.schemas';
import { lockOrder } from '../orders/state-change';
import { recordOperatorAction } from '../audit/operator-scope';

/**
 * A laboratory operation that cannot be applied: `not_found` (no such order, result, exception),
 * `conflict` (it does not fit the current data, e.g. releasing twice) or `invalid` (bad input).
 * An operation the transition table refuses throws IllegalTransitionError instead.
 */
export class LaboratoryOperationError extends Error {
  override name = 'LaboratoryOperationError';
  constructor(
    readonly kind: 'not_found' | 'conflict' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

export interface EmittedEvent {
  event_id: string;
  type: EventType;
  sequence: number;
}

/** What every operation answers: the order as partners now see it and the events it emitted. */
export interface OperationOutcome {
  order: Order;
  events: EmittedEvent[];
}

async function streamPosition(tx: Transaction, order: OrderRow): Promise<number> {
  const [row] = await tx
    .select({ last: sql<string | null>`max(${events.sequence})` })
    .from(events)
    .where(and(eq(events.clientId, order.clientId), eq(events.environment, order.environment)));
  return Number(row.last ?? 0);
}

/**
 * Runs `work` on the locked order in one transaction, so the change and its events commit
 * together or not at all. While the order row is locked no other writer can add events for this
 * order, so the order's events after the stream position read first are exactly this work's.
 */
export async function operateOnOrder<T extends object>(
  db: Database,
  orderId: string,
  work: (tx: Transaction, order: OrderRow) => Promise<T>,
): Promise<T & OperationOutcome> {
  return db.transaction(async (tx) => {
    const order = await lockOrder(tx, orderId);
    if (!order) throw new LaboratoryOperationError('not_found', `no order ${orderId}`);
    const before = await streamPosition(tx, order);
    const extra = await work(tx, order);
    await recordOperatorAction(tx, order);
    const [current] = await tx.select().from(orders).where(eq(orders.id, orderId));
    const emitted = await tx
      .select({ event_id: events.id, type: events.type, sequence: events.sequence })
      .from(events)
      .where(and(eq(events.clientId, order.clientId), eq(events.environment, order.environment), gt(events.sequence, before), eq(events.orderId, orderId)))
      .orderBy(asc(events.sequence));
    return { ...extra, order: await orderResource(tx, current), events: emitted.map((e) => ({ ...e, type: e.type as EventType, sequence: Number(e.sequence) })) };
  });
}
