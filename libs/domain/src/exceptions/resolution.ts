import { and, eq } from 'drizzle-orm';
import { orderExceptions, type Transaction } from '@lop/db';
import type { ExceptionCategory } from './exceptions.schemas';
import { partnerActionOf, samePartnerAction, type PartnerAction } from './partner-action';

/** Which open exceptions of an order a change settles, and the resolution operators will read. */
export interface ExceptionSettlement {
  category?: ExceptionCategory;
  entityId?: string;
  resolution: string;
}

/**
 * Resolves the order's open exceptions that match (every open one when neither a category nor
 * an entity is named), in the caller's transaction. Returns what the partner must now act on
 * (partner-action.ts) when settling changed it, or null when the partner's view is unchanged —
 * nothing settled, only laboratory-owned ones, or another of the same category is still open — so
 * the caller emits an event only when it has something new to show.
 */
export async function settleOpenExceptions(tx: Transaction, orderId: string, settlement: ExceptionSettlement, now: Date): Promise<PartnerAction | null> {
  const before = await partnerActionOf(tx, orderId);
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
  const after = await partnerActionOf(tx, orderId);
  return samePartnerAction(after, before) ? null : after;
}
