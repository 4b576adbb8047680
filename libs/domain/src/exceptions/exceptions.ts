import { desc, eq } from 'drizzle-orm';
import { orderExceptions, type Database } from '@lop/db';
import type { ExceptionCategory, OrderException, OrderExceptions } from './exceptions.schemas';

export type ExceptionRow = typeof orderExceptions.$inferSelect;

type Reader = Pick<Database, 'select'>;

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
