import { LIFECYCLE_DETAILS, type LifecycleDetail } from '@lop/contract';
import { and, asc, eq, sql } from 'drizzle-orm';
import { resultVersions, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { notFound } from '../http/errors';
import type { OrderRow } from '../orders/order-resource';
import { findOrderForCaller } from '../orders/orders';
import type { PendingReason, ResultCollection, ResultState, ResultVersion, ResultVersionType } from './results.schemas';

export type ResultRow = typeof resultVersions.$inferSelect;

type Reader = Pick<Database, 'select'>;


/**
 * A released version as partners see it. Observations go out exactly as stored (recording
 * refuses a `loinc` key), each marked `loinc: "not_modeled"` because no code is ever derived.
 */
export function toResultVersion(order: OrderRow, row: ResultRow): ResultVersion {
  if (row.status !== 'released' || row.version === null || !row.releasedAt) throw new Error(`result ${row.id} is not released`);
  return {
    result_id: row.id,
    order_id: row.orderId,
    accession_id: order.accessionId,
    panel_item_id: order.itemId,
    accession_number: order.accessionNumber,
    version: row.version,
    version_type: row.versionType as ResultVersionType,
    state: row.state as ResultState,
    status: 'released',
    performing_laboratory: row.performingLaboratory,
    performing_laboratory_system: row.performingLaboratorySystem,
    source_result_id: row.sourceResultId,
    supersedes_result_id: row.supersedesResultId,
    is_critical: row.isCritical,
    released_at: row.releasedAt.toISOString(),
    observations: (row.observations as Record<string, unknown>[]).map((observation) => ({ ...observation, loinc: 'not_modeled' as const })),
  };
}

/** Released versions of an order, oldest first. Unreleased rows are never read on a partner path. */
export async function releasedVersionsOf(db: Reader, orderId: string): Promise<ResultRow[]> {
  return db
    .select()
    .from(resultVersions)
    .where(and(eq(resultVersions.orderId, orderId), eq(resultVersions.status, 'released')))
    .orderBy(asc(resultVersions.version));
}

async function hasUnreleasedVersion(db: Reader, orderId: string): Promise<boolean> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(resultVersions)
    .where(and(eq(resultVersions.orderId, orderId), eq(resultVersions.status, 'recorded')));
  return row.n > 0;
}

/**
 * A result is pending while one is still expected: nothing released yet on an order that can
 * still produce results, or a newer version recorded but not yet released.
 */
function pendingReasonOf(order: OrderRow, releasedCount: number, unreleased: boolean): PendingReason | null {
  const { lifecycle } = LIFECYCLE_DETAILS[order.lifecycleDetail as LifecycleDetail];
  if (lifecycle === 'cancelled' || lifecycle === 'failed') return null;
  if (releasedCount === 0) return 'not_yet_released';
  return unreleased ? 'update_not_yet_released' : null;
}

export function toResultCollection(order: OrderRow, released: ResultRow[], unreleased: boolean): ResultCollection {
  const supersededBy = new Map<string, string>();
  for (const row of released) if (row.supersedesResultId) supersededBy.set(row.supersedesResultId, row.id);
  const current = released.at(-1) ?? null;
  const pendingReason = pendingReasonOf(order, released.length, unreleased);
  return {
    order_id: order.id,
    pending: pendingReason !== null,
    pending_reason: pendingReason,
    current_result_id: current?.id ?? null,
    current_version: current?.version ?? null,
    version_lineage: released.map((row) => ({
      result_id: row.id,
      version: row.version!,
      version_type: row.versionType as ResultVersionType,
      state: row.state as ResultState,
      released_at: row.releasedAt!.toISOString(),
      supersedes_result_id: row.supersedesResultId,
      superseded_by_result_id: supersededBy.get(row.id) ?? null,
      is_current: row.id === current?.id,
    })),
    results: released.map((row) => toResultVersion(order, row)),
  };
}

/** GET /v1/orders/{orderId}/results */
export async function listResults(db: Database, caller: Caller, orderId: string): Promise<ResultCollection> {
  const order = await findOrderForCaller(db, caller, orderId);
  const [released, unreleased] = await Promise.all([releasedVersionsOf(db, order.id), hasUnreleasedVersion(db, order.id)]);
  return toResultCollection(order, released, unreleased);
}

/** The caller's order and one of its released versions; anything else (unreleased, unknown, another order's) is 404. */
export async function findReleasedResult(db: Reader, caller: Caller, orderId: string, resultId: string): Promise<{ order: OrderRow; row: ResultRow }> {
  const order = await findOrderForCaller(db, caller, orderId);
  const [row] = await db
    .select()
    .from(resultVersions)
    .where(and(eq(resultVersions.id, resultId), eq(resultVersions.orderId, order.id), eq(resultVersions.status, 'released')));
  if (!row) throw notFound('released result');
  return { order, row };
}

/** GET /v1/orders/{orderId}/results/{resultId} */
export async function getResult(db: Database, caller: Caller, orderId: string, resultId: string): Promise<ResultVersion> {
  const { order, row } = await findReleasedResult(db, caller, orderId, resultId);
  return toResultVersion(order, row);
}
