import { asc, eq } from 'drizzle-orm';
import { orders, resultVersions, type Database } from '@lop/db';
import { exceptionRowsOf, toOrderException, type ExceptionRow } from '../exceptions/exceptions';
import { orderResource, type SpecimenRow } from '../orders/order-resource';
import type { Order } from '../orders/orders.schemas';
import type { ResultRow } from '../results/results';
import { LaboratoryOperationError } from './operation';

/** Operators see what partners never do: unreleased versions, notes and resolution text. */
export function operatorException(row: ExceptionRow) {
  return { ...toOrderException(row), order_id: row.orderId, entity_id: row.entityId, operator_notes: row.operatorNotes, resolution_text: row.resolutionText };
}
export type OperatorException = ReturnType<typeof operatorException>;

export function operatorResult(row: ResultRow) {
  const released = row.status === 'released';
  return {
    result_id: row.id,
    order_id: row.orderId,
    status: row.status,
    version: row.version,
    version_type: released ? row.versionType : null,
    state: released ? row.state : null,
    is_critical: row.isCritical,
    supersedes_result_id: row.supersedesResultId,
    source_result_id: row.sourceResultId,
    performing_laboratory: row.performingLaboratory,
    performing_laboratory_system: row.performingLaboratorySystem,
    observation_count: (row.observations as unknown[]).length,
    report_content_type: row.reportContentType,
    recorded_at: row.createdAt.toISOString(),
    released_at: row.releasedAt ? row.releasedAt.toISOString() : null,
  };
}
export type OperatorResult = ReturnType<typeof operatorResult>;

export function operatorSpecimen(row: SpecimenRow): Order['specimens'][number] {
  return {
    specimen_id: row.id,
    specimen_code: row.specimenCode,
    specimen_type: row.specimenType,
    status: row.status as Order['specimens'][number]['status'],
    accession_number: row.accessionNumber,
    rejection_reason: row.rejectionReason,
    collected_at: row.collectedAt ? row.collectedAt.toISOString() : null,
    received_at: row.receivedAt ? row.receivedAt.toISOString() : null,
    recollection_of: row.recollectionOf,
  };
}

/** `lab show`: the order, every result version (released or not) and every exception with its notes. */
export async function showOrder(db: Database, input: { order_id: string }) {
  const [order] = await db.select().from(orders).where(eq(orders.id, input.order_id));
  if (!order) throw new LaboratoryOperationError('not_found', `no order ${input.order_id}`);
  const results = await db.select().from(resultVersions).where(eq(resultVersions.orderId, order.id)).orderBy(asc(resultVersions.createdAt), asc(resultVersions.id));
  return {
    order: await orderResource(db, order),
    results: results.map(operatorResult),
    exceptions: (await exceptionRowsOf(db, order.id)).map(operatorException),
  };
}
