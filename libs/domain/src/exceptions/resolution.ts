import { and, desc, eq, inArray } from 'drizzle-orm';
import { orderExceptions, type Database, type Transaction } from '@lop/db';
import type { NextAction } from '@lop/contract';
import type { ExceptionCategory } from './exceptions.schemas';

/** Which open exceptions of an order a change settles, and the resolution operators will read. */
export interface ExceptionSettlement {
  category?: ExceptionCategory;
  entityId?: string;
  resolution: string;
}

/**
 * Resolves the order's open exceptions that match (every open one when neither a category nor
 * an entity is named), in the caller's transaction. Returns the partner's new action-required
 * code when settling changed it (see actionRequiredCode), or null when the partner's view is
 * unchanged — nothing settled, only laboratory-owned ones, or another of the same category is
 * still open — so the caller emits an event only when it has something new to show.
 */
export async function settleOpenExceptions(tx: Transaction, orderId: string, settlement: ExceptionSettlement, now: Date): Promise<string | null> {
  const before = await actionRequiredCode(tx, orderId);
  const settled = await tx
    .update(orderExceptions)
    .set({ status: 'resolved', resolvedAt: now, resolutionText: settlement.resolution })
    .where(
      and(
        eq(orderExceptions.orderId, orderId),
        eq(orderExceptions.status, 'open'),
        ...(settlement.category ? [eq(orderExceptions.category, settlement.category)] : []),
        ...(settlement.entityId ? [eq(orderExceptions.entityId, settlement.entityId)] : []),
      ),
    )
    .returning({ ownerRole: orderExceptions.ownerRole });
  if (!settled.some((row) => row.ownerRole === 'partner')) return null;
  const after = await actionRequiredCode(tx, orderId);
  return after === before ? null : after;
}

/**
 * The partner's action-required state as events state it in `action_required_code`: the category
 * of the newest exception the partner still has to act on, or `none`.
 */
export async function actionRequiredCode(tx: Pick<Database, 'select'>, orderId: string): Promise<string> {
  const [row] = await tx
    .select({ category: orderExceptions.category })
    .from(orderExceptions)
    .where(and(eq(orderExceptions.orderId, orderId), eq(orderExceptions.status, 'open'), eq(orderExceptions.ownerRole, 'partner')))
    .orderBy(desc(orderExceptions.openedAt), desc(orderExceptions.id))
    .limit(1);
  return row?.category ?? 'none';
}

/** actionRequiredCode of several orders at once; an order with nothing to act on is absent. */
export async function actionRequiredCodes(db: Pick<Database, 'selectDistinctOn'>, orderIds: string[]): Promise<Map<string, string>> {
  if (orderIds.length === 0) return new Map();
  const rows = await db
    .selectDistinctOn([orderExceptions.orderId], { orderId: orderExceptions.orderId, category: orderExceptions.category })
    .from(orderExceptions)
    .where(and(inArray(orderExceptions.orderId, orderIds), eq(orderExceptions.status, 'open'), eq(orderExceptions.ownerRole, 'partner')))
    .orderBy(orderExceptions.orderId, desc(orderExceptions.openedAt), desc(orderExceptions.id));
  return new Map(rows.map((row) => [row.orderId, row.category]));
}

/**
 * What an open exception the partner owns asks of them, by category. While one is open the
 * order's next_action is this rather than its state's (which would say "wait" while the partner
 * is the one holding the order up); the newest open one decides, as for action_required_code.
 * A category not listed (an operator may hand a laboratory category to the partner) asks
 * `resolve_exception`.
 */
export const PARTNER_EXCEPTION_ACTIONS: Readonly<Record<string, NextAction>> = {
  order_information_required: 'provide_information',
  specimen_rejected: 'recollect_specimen',
  order_rejected: 'resolve_exception',
};

/** The next_action an open partner-owned exception of `category` asks for. */
export const partnerActionFor = (category: string): NextAction => PARTNER_EXCEPTION_ACTIONS[category] ?? 'resolve_exception';
