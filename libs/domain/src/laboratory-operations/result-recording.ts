import type { LifecycleDetail } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { catalogItems, resultVersions, type Database } from '@lop/db';
import { TRANSITIONS } from '../orders/lifecycle';
import type { ResultRecordBody } from './laboratory-operations.schemas';
import { describeObservationNumbers } from './observation-text';
import { LaboratoryOperationError, operateOnOrder } from './operation';
import { operatorResult } from './operator-views';

/** The states a result can be recorded in are those some release can start from: the transition table decides. */
const RECORDABLE_FROM = [...new Set([...TRANSITIONS.release_partial.from, ...TRANSITIONS.release_final.from, ...TRANSITIONS.release_correction.from])] as LifecycleDetail[];

// Placeholders for columns a version only gets when released; never shown to partners.
const UNASSIGNED = 'unassigned';

/**
 * Stores a result version without releasing it: partners see nothing of it except that a result
 * is pending. Observations are kept exactly as supplied (text stays text, no conversion).
 * The number check repeats the input schema's for in-process callers that skip it (the sandbox):
 * whichever way a result arrives, a value that has lost its written form is never stored.
 */
export async function recordResult(db: Database, input: ResultRecordBody & { order_id: string }, now = new Date()) {
  const numbers = describeObservationNumbers(input.observations);
  if (numbers) throw new LaboratoryOperationError('invalid', numbers);
  return operateOnOrder(db, input.order_id, async (tx, order) => {
    if (!RECORDABLE_FROM.includes(order.lifecycleDetail as LifecycleDetail)) {
      throw new LaboratoryOperationError('conflict', `cannot record a result for an order whose state is ${order.lifecycleDetail} (allowed from: ${RECORDABLE_FROM.join(', ')})`);
    }
    const [item] = await tx.select({ performingLaboratory: catalogItems.performingLaboratory }).from(catalogItems).where(eq(catalogItems.id, order.itemId));
    const [row] = await tx
      .insert(resultVersions)
      .values({
        orderId: order.id,
        version: null,
        versionType: UNASSIGNED,
        state: UNASSIGNED,
        status: 'recorded',
        performingLaboratory: input.performing_laboratory ?? item.performingLaboratory,
        performingLaboratorySystem: input.performing_laboratory_system,
        sourceResultId: input.source_result_id,
        observations: input.observations,
        isCritical: input.is_critical ?? false,
        reportDocument: input.report?.content_base64 ?? null,
        reportContentType: input.report?.content_type ?? null,
        createdAt: now,
      })
      .returning();
    return { result: operatorResult(row) };
  });
}
