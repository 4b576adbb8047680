import type { LifecycleDetail } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { resultVersions, type Database, type Transaction } from '@lop/db';
import type { EventDraft } from '../events/append';
import { appendEvents } from '../webhooks/outbox';
import { nextState, type Transition } from '../orders/lifecycle';
import { orderPath, resultPath, resultsPath } from '../http/resource-paths';
import type { OrderRow } from '../orders/order-resource';
import { changeOrderState, orderEvent } from '../orders/state-change';
import { releasedVersionsOf, type ResultRow } from '../results/results';
import type { ResultProvenance, ResultState, ResultVersionType } from '../results/results.schemas';
import type { ReleaseAs } from './laboratory-operations.schemas';
import { LaboratoryOperationError, operateOnOrder } from './operation';
import { operatorResult } from './operator-views';

/** How each kind of release moves the order and which event announces it (amended is a correction to partners). */
const RELEASES: Record<ReleaseAs, { transition: Transition; event: 'result.partial' | 'result.final' | 'result.corrected' }> = {
  partial: { transition: 'release_partial', event: 'result.partial' },
  final: { transition: 'release_final', event: 'result.final' },
  corrected: { transition: 'release_correction', event: 'result.corrected' },
  amended: { transition: 'release_correction', event: 'result.corrected' },
};

function versionTypeOf(as: ReleaseAs, hasPrevious: boolean): ResultVersionType {
  if (as === 'corrected') return 'correction';
  if (as === 'amended') return 'amendment';
  return hasPrevious ? 'update' : 'initial';
}

function resultEvent(order: OrderRow, row: ResultRow, type: EventDraft['type'], provenance: ResultProvenance, now: Date): EventDraft {
  return orderEvent(order, type, now, {
    result_id: row.id,
    result_version: row.version!,
    result_provenance: provenance,
    result_is_critical: row.isCritical,
    links: { order: orderPath(order.id), results: resultsPath(order.id), result: resultPath(order.id, row.id) },
  });
}

async function findResultOrder(db: Database, resultId: string): Promise<{ orderId: string }> {
  const [found] = await db.select({ orderId: resultVersions.orderId }).from(resultVersions).where(eq(resultVersions.id, resultId));
  if (!found) throw new LaboratoryOperationError('not_found', `no result ${resultId}`);
  return found;
}

async function resultRowForUpdate(tx: Transaction, resultId: string): Promise<ResultRow> {
  const [row] = await tx.select().from(resultVersions).where(eq(resultVersions.id, resultId)).for('update');
  return row;
}

/**
 * Releases a recorded version as the next version of the order's append-only lineage: it
 * supersedes the previous released version (which stays retrievable), moves the order through
 * the transition table and announces itself, plus result.critical when it is critical.
 */
export async function releaseResult(
  db: Database,
  input: { result_id: string; as: ReleaseAs; critical?: boolean; provenance?: ResultProvenance },
  now = new Date(),
) {
  const { orderId } = await findResultOrder(db, input.result_id);
  return operateOnOrder(db, orderId, async (tx, order) => {
    const row = await resultRowForUpdate(tx, input.result_id);
    if (row.status !== 'recorded') throw new LaboratoryOperationError('conflict', `result ${row.id} is already released as version ${row.version}`);
    const release = RELEASES[input.as];
    nextState(order.lifecycleDetail as LifecycleDetail, release.transition);
    const previous = (await releasedVersionsOf(tx, order.id)).at(-1);
    const [released] = await tx
      .update(resultVersions)
      .set({
        status: 'released',
        version: (previous?.version ?? 0) + 1,
        versionType: versionTypeOf(input.as, previous !== undefined),
        state: input.as satisfies ResultState,
        supersedesResultId: previous?.id ?? null,
        isCritical: row.isCritical || input.critical === true,
        releasedAt: now,
      })
      .where(eq(resultVersions.id, row.id))
      .returning();
    const provenance = input.provenance ?? 'laboratory_release';
    await changeOrderState(
      tx,
      order,
      release.transition,
      {
        events: (current) => [
          resultEvent(current, released, release.event, provenance, now),
          ...(released.isCritical ? [resultEvent(current, released, 'result.critical', provenance, now)] : []),
        ],
      },
      now,
    );
    return { result: operatorResult(released) };
  });
}

/**
 * Flags a version critical. A released version announces it at once with result.critical alone;
 * a recorded one announces it when released. Flagging twice changes nothing.
 */
export async function flagCritical(db: Database, input: { result_id: string; provenance?: ResultProvenance }, now = new Date()) {
  const { orderId } = await findResultOrder(db, input.result_id);
  return operateOnOrder(db, orderId, async (tx, order) => {
    const row = await resultRowForUpdate(tx, input.result_id);
    if (row.isCritical) return { result: operatorResult(row) };
    const [flagged] = await tx.update(resultVersions).set({ isCritical: true }).where(eq(resultVersions.id, row.id)).returning();
    if (flagged.status === 'released') {
      await appendEvents(tx, { clientId: order.clientId, environment: order.environment }, [
        resultEvent(order, flagged, 'result.critical', input.provenance ?? 'laboratory_release', now),
      ]);
    }
    return { result: operatorResult(flagged) };
  });
}
