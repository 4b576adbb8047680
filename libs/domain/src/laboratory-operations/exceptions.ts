import { LIFECYCLE_DETAILS, type LifecycleDetail } from '@lop/contract';
import { and, eq } from 'drizzle-orm';
import { orders, resultVersions, specimens, type Database, type Transaction } from '@lop/db';
import type { EventDraft } from '../events/append';
import { appendEvents } from '../webhooks/outbox';
import { EXCEPTION_CATEGORIES, type ExceptionCategory } from '../exceptions/exceptions.schemas';
import { exceptionRowsOf, insertExceptionRow, lockExceptionRow, markExceptionResolved, orderIdOfException, type ExceptionRow } from '../exceptions/exceptions';
import { partnerActionFrom, partnerActionOf, samePartnerAction } from '../exceptions/partner-action';
import { actionRequiredData } from '../orders/order-events';
import { isClosed } from '../orders/lifecycle';
import type { OrderRow } from '../orders/order-resource';
import { orderEvent } from '../orders/state-change';
import type { OpenExceptionInput } from './laboratory-operations.schemas';
import { LaboratoryOperationError, operateOnOrder } from './operation';
import { operatorException } from './operator-views';

export { exceptionsPath } from '../http/resource-paths';

/** integration.action_required: the partner must act; the category says on what. */
export function actionRequiredEvent(order: OrderRow, category: ExceptionCategory, now: Date): EventDraft {
  return orderEvent(order, 'integration.action_required', now, actionRequiredData(order.id, partnerActionFrom(category)));
}

type ExceptionSpec = Omit<OpenExceptionInput, 'order_id'>;

/**
 * Inserts one exception of the canonical model, filling what the caller left out from its
 * category. Returns the event it implies: integration.action_required when the partner owns it.
 * Every exception is born here, so here a closed order refuses one the partner would own: it
 * would name a next_action the partner can never clear (a cancelled order cannot be cancelled again).
 */
export async function insertException(tx: Transaction, order: OrderRow, spec: ExceptionSpec, now: Date): Promise<{ row: ExceptionRow; events: (order: OrderRow) => EventDraft[] }> {
  const defaults = EXCEPTION_CATEGORIES[spec.category];
  const entityType = spec.entity_type ?? defaults.entity_type;
  const ownerRole = spec.owner_role ?? defaults.owner_role;
  const detail = order.lifecycleDetail as LifecycleDetail;
  if (ownerRole === 'partner' && isClosed(detail)) {
    throw new LaboratoryOperationError(
      'conflict',
      `cannot open a partner-owned ${spec.category} exception on an order whose state is ${detail}: the order is ${LIFECYCLE_DETAILS[detail].lifecycle}, and a closed order (cancelled or completed) gives the partner nothing more to do`,
    );
  }
  const row = await insertExceptionRow(tx, {
    orderId: order.id,
    category: spec.category,
    severity: spec.severity ?? defaults.severity,
    ownerRole,
    entityType,
    entityId: spec.entity_id ?? (entityType === 'order' ? order.id : null),
    retryable: spec.retryable ?? defaults.retryable,
    openedAt: now,
    sourceExceptionType: spec.source_exception_type ?? null,
    sourceDomain: defaults.domain,
    sourceAdapterKey: spec.source_adapter_key ?? null,
    operatorNotes: spec.operator_notes ?? null,
  });
  return { row, events: (current) => (row.ownerRole === 'partner' ? [actionRequiredEvent(current, spec.category, now)] : []) };
}

async function checkEntity(tx: Transaction, order: OrderRow, entityType: string, entityId: string): Promise<void> {
  const table = entityType === 'specimen' ? specimens : entityType === 'result' ? resultVersions : null;
  const found = table
    ? (await tx.select({ id: table.id }).from(table).where(and(eq(table.id, entityId), eq(table.orderId, order.id)))).length > 0
    : entityId === order.id;
  if (!found) throw new LaboratoryOperationError('invalid', `${entityType} ${entityId} does not belong to order ${order.id}`);
}

/** Opens an exception on an order without changing its state. */
export async function openException(db: Database, input: OpenExceptionInput, now = new Date()) {
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    const { order_id: _orderId, ...spec } = input;
    if (spec.entity_id) await checkEntity(tx, order, spec.entity_type ?? EXCEPTION_CATEGORIES[spec.category].entity_type, spec.entity_id);
    const opened = await insertException(tx, order, spec, now);
    await appendEvents(tx, { clientId: order.clientId, environment: order.environment }, opened.events(order));
    return { exception: operatorException(opened.row) };
  });
}

/**
 * Resolves an open exception. The resolution text and notes stay with operators. When that
 * changes what the partner must act on, it emits order.updated with `action_required_code` (what
 * is left, or `none`); resolving a laboratory-owned one, or one of two open of the same category,
 * changes nothing a partner's event could show, so it emits nothing.
 */
export async function resolveException(db: Database, input: { exception_id: string; resolution_text: string; operator_notes?: string }, now = new Date()) {
  const orderId = await orderIdOfException(db, input.exception_id);
  if (!orderId) throw new LaboratoryOperationError('not_found', `no exception ${input.exception_id}`);
  return operateOnOrder(db, orderId, async (tx, order) => {
    const row = (await lockExceptionRow(tx, input.exception_id))!;
    if (row.status !== 'open') throw new LaboratoryOperationError('conflict', `exception ${row.id} is already ${row.status}`);
    const before = await partnerActionOf(tx, order.id);
    const resolved = await markExceptionResolved(tx, row.id, { resolvedAt: now, resolutionText: input.resolution_text, operatorNotes: input.operator_notes ?? row.operatorNotes });
    const after = await partnerActionOf(tx, order.id);
    if (!samePartnerAction(after, before)) {
      await appendEvents(tx, { clientId: order.clientId, environment: order.environment }, [orderEvent(order, 'order.updated', now, actionRequiredData(order.id, after))]);
    }
    return { exception: operatorException(resolved) };
  });
}

/** Every exception of an order with its operator-only fields, newest first. */
export async function listOperatorExceptions(db: Database, input: { order_id: string }) {
  const [order] = await db.select({ id: orders.id }).from(orders).where(eq(orders.id, input.order_id));
  if (!order) throw new LaboratoryOperationError('not_found', `no order ${input.order_id}`);
  return { order_id: order.id, exceptions: (await exceptionRowsOf(db, order.id)).map(operatorException) };
}
