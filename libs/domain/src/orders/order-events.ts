import { LIFECYCLE_DETAILS, type LifecycleDetail } from '@lop/contract';
import type { orders } from '@lop/db';
import type { EventData } from '../events/events.schemas';
import { actionRequiredCodeOf, type PartnerAction } from '../exceptions/partner-action';
import { exceptionsPath, orderPath } from '../http/resource-paths';

type OrderRow = typeof orders.$inferSelect;

/**
 * What an event says about the partner's open exceptions: `action_required_code` is the category
 * to act on, or `none` once nothing is left; links lead to the authoritative list.
 */
export function actionRequiredData(orderId: string, action: PartnerAction): Pick<EventData, 'action_required_code' | 'links'> {
  return { action_required_code: actionRequiredCodeOf(action), links: { order: orderPath(orderId), exceptions: exceptionsPath(orderId) } };
}

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
