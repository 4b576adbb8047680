import { desc, eq } from 'drizzle-orm';
import { orderExceptions, type Database, type Transaction } from '@lop/db';
import type { ExceptionCategory, OrderException, OrderExceptions } from './exceptions.schemas';

export type ExceptionRow = typeof orderExceptions.$inferSelect;

type Reader = Pick<Database, 'select'>;

/*
 * The exceptions folder owns order_exceptions: its rows are written here (opened, resolved by an
 * operator) and in resolution.ts (settled when the order moves on); laboratory operations decide
 * what to open and when, and call these.
 */

/** Opens an exception: the row as given, status open. */
export async function insertExceptionRow(tx: Transaction, values: Omit<typeof orderExceptions.$inferInsert, 'status'>): Promise<ExceptionRow> {
  const [row] = await tx.insert(orderExceptions).values({ ...values, status: 'open' }).returning();
  return row;
}

/** The order an exception belongs to, or null when there is no such exception. */
export async function orderIdOfException(db: Reader, exceptionId: string): Promise<string | null> {
  const [found] = await db.select({ orderId: orderExceptions.orderId }).from(orderExceptions).where(eq(orderExceptions.id, exceptionId));
  return found?.orderId ?? null;
}

/** The exception's row, locked until the transaction ends (an operator's resolution reads then writes it). */
export async function lockExceptionRow(tx: Transaction, exceptionId: string): Promise<ExceptionRow | undefined> {
  const [row] = await tx.select().from(orderExceptions).where(eq(orderExceptions.id, exceptionId)).for('update');
  return row;
}

/** Records an operator's resolution of an exception. */
export async function markExceptionResolved(
  tx: Transaction,
  exceptionId: string,
  resolution: { resolvedAt: Date; resolutionText: string; operatorNotes: string | null },
): Promise<ExceptionRow> {
  const [row] = await tx
    .update(orderExceptions)
    .set({ status: 'resolved', ...resolution })
    .where(eq(orderExceptions.id, exceptionId))
    .returning();
  return row;
}

/** The partner view of one exception: the structural fields, nothing an operator wrote. */
export function toOrderException(row: ExceptionRow): OrderException {
  return {
    exception_id: row.id,
    category: row.category as ExceptionCategory,
    severity: row.severity as OrderException['severity'],
    status: row.status as OrderException['status'],
    owner_role: row.ownerRole as OrderException['owner_role'],
    entity_type: row.entityType as OrderException['entity_type'],
    retryable: row.retryable,
    opened_at: row.openedAt.toISOString(),
    resolved_at: row.resolvedAt ? row.resolvedAt.toISOString() : null,
    source: { exception_type: row.sourceExceptionType, domain: row.sourceDomain, adapter_key: row.sourceAdapterKey },
  };
}

/** All exceptions of an order, newest first. */
export async function exceptionRowsOf(db: Reader, orderId: string): Promise<ExceptionRow[]> {
  return db.select().from(orderExceptions).where(eq(orderExceptions.orderId, orderId)).orderBy(desc(orderExceptions.openedAt), desc(orderExceptions.id));
}

export function toOrderExceptions(orderId: string, rows: ExceptionRow[]): OrderExceptions {
  const exceptions = rows.map(toOrderException);
  return {
    order_id: orderId,
    count: exceptions.length,
    action_required: exceptions.some((e) => e.status === 'open' && e.owner_role === 'partner'),
    exceptions,
  };
}
