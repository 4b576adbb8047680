import type { orders } from '@lop/db';
import type { EventData } from '../events/events.schemas';
import { LIFECYCLE_DETAILS, type LifecycleDetail } from './lifecycle';

type OrderRow = typeof orders.$inferSelect;

export const orderPath = (orderId: string) => `/v1/orders/${orderId}`;

/** The allow-listed identifiers and coarse state every order-related event carries. */
export function orderEventData(order: OrderRow, extra: Partial<EventData> = {}): EventData {
  const state = LIFECYCLE_DETAILS[order.lifecycleDetail as LifecycleDetail];
  return {
    order_id: order.id,
    external_order_id: order.externalOrderId,
    program_id: order.programId,
    client_id: order.clientId,
    environment: order.environment,
    lifecycle: state.lifecycle,
    next_action: state.next_action,
    links: { order: orderPath(order.id) },
    ...extra,
  };
}
