import { and, desc, eq, gt, inArray, isNull, lt, lte } from 'drizzle-orm';
import { reportRetrievals, resultVersions, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { PartnerError } from '../http/errors';
import { resultPath } from '../http/resource-paths';
import { findReleasedResult } from './results';
import type { ReportAvailability, ReportDocument } from './results.schemas';

/** How long a report retrieval record (and so its retrieval path) stays usable. */
export const REPORT_PATH_TTL_SECONDS = 300;

/**
 * Expired records are kept this much longer, so a late use is told "expired" rather than
 * "unknown"; then the next issue prunes them.
 */
export const REPORT_RETRIEVAL_RETENTION_SECONDS = 3600;

/**
 * A record with at least this much of its life left is answered again instead of issuing a new one:
 * repeated calls for the same key and version write one row per half TTL, not one per call.
 */
const REUSE_MIN_REMAINING_SECONDS = REPORT_PATH_TTL_SECONDS / 2;

/** Rows one issue deletes at most: pruning stays a small, bounded piece of a GET. */
const PRUNE_BATCH = 500;

type Reader = Pick<Database, 'select'>;
type RetrievalRow = typeof reportRetrievals.$inferSelect;

const reportNotModeled = () =>
  new PartnerError('report_not_modeled', 'The laboratory supplied no report document for this released result; no report is fabricated.');

const notValid = () => new PartnerError('not_found', 'This report retrieval path is not valid for this API key; ask GET …/report for a new one.');

export const reportDocumentPath = (orderId: string, resultId: string) => `${resultPath(orderId, resultId)}/report/document`;

/** The released version that superseded `resultId`, if any (a lineage supersedes each version at most once). */
async function supersededBy(db: Reader, resultId: string): Promise<string | null> {
  const [row] = await db
    .select({ id: resultVersions.id })
    .from(resultVersions)
    .where(and(eq(resultVersions.supersedesResultId, resultId), eq(resultVersions.status, 'released')))
    .limit(1);
  return row?.id ?? null;
}

/** Deletes a bounded batch of records expired longer than the retention; concurrent issuers skip each other's rows. */
async function pruneExpired(db: Database, now: Date): Promise<void> {
  const cutoff = new Date(now.getTime() - REPORT_RETRIEVAL_RETENTION_SECONDS * 1000);
  const stale = db
    .select({ id: reportRetrievals.id })
    .from(reportRetrievals)
    .where(lt(reportRetrievals.expiresAt, cutoff))
    .limit(PRUNE_BATCH)
    .for('update', { skipLocked: true });
  await db.delete(reportRetrievals).where(inArray(reportRetrievals.id, stale));
}

/**
 * A live record issued to this very key for this order, program and version, with its supersession
 * unchanged and at least REUSE_MIN_REMAINING_SECONDS left. Found through the expiry index: only
 * records issued in the last half TTL qualify, one per (key, version) at most thanks to the reuse.
 */
async function liveRecord(db: Reader, caller: Caller, order: { id: string; programId: string }, resultId: string, superseded: string | null, now: Date) {
  const [record] = await db
    .select({ id: reportRetrievals.id })
    .from(reportRetrievals)
    .where(
      and(
        gt(reportRetrievals.expiresAt, new Date(now.getTime() + REUSE_MIN_REMAINING_SECONDS * 1000)),
        // Issued by then: `now` is a parameter (tests issue records in the past).
        lte(reportRetrievals.issuedAt, now),
        eq(reportRetrievals.keyId, caller.keyId),
        eq(reportRetrievals.clientId, caller.clientId),
        eq(reportRetrievals.laboratoryId, caller.laboratoryId),
        eq(reportRetrievals.environment, caller.environment),
        eq(reportRetrievals.orderId, order.id),
        eq(reportRetrievals.programId, order.programId),
        eq(reportRetrievals.resultId, resultId),
        superseded === null ? isNull(reportRetrievals.supersededByResultId) : eq(reportRetrievals.supersededByResultId, superseded),
      ),
    )
    .orderBy(desc(reportRetrievals.expiresAt))
    .limit(1);
  return record ?? null;
}

/**
 * GET …/results/{resultId}/report: when the laboratory supplied a document for this released
 * version, answers the path of a retrieval record for this very key (a live one it was issued
 * recently, or a new one); otherwise an explicit `report_not_modeled` refusal. The path carries
 * the record's id and nothing that authorizes by itself: no signature, no expiry, no token.
 */
export async function getReportAvailability(db: Database, caller: Caller, orderId: string, resultId: string, now = new Date()): Promise<ReportAvailability> {
  const { order, row } = await findReleasedResult(db, caller, orderId, resultId);
  if (!row.reportDocument) throw reportNotModeled();
  const superseded = await supersededBy(db, row.id);
  let record = await liveRecord(db, caller, order, row.id, superseded, now);
  if (!record) {
    await pruneExpired(db, now);
    [record] = await db
      .insert(reportRetrievals)
      .values({
        keyId: caller.keyId,
        clientId: caller.clientId,
        laboratoryId: caller.laboratoryId,
        environment: caller.environment,
        programId: order.programId,
        orderId: order.id,
        resultId: row.id,
        supersededByResultId: superseded,
        issuedAt: now,
        expiresAt: new Date(now.getTime() + REPORT_PATH_TTL_SECONDS * 1000),
      })
      .returning({ id: reportRetrievals.id });
  }
  return {
    order_id: order.id,
    result_id: row.id,
    report: {
      available: true,
      state: 'available',
      reason: 'The laboratory supplied a report document for this released version.',
      retrieval_path: `${reportDocumentPath(order.id, row.id)}?retrieval_id=${record.id}`,
    },
  };
}

/** The record belongs to this caller's key, client, laboratory and environment, and names this order and result. */
function issuedFor(record: RetrievalRow, caller: Caller, orderId: string, resultId: string): boolean {
  return (
    record.keyId === caller.keyId &&
    record.clientId === caller.clientId &&
    record.laboratoryId === caller.laboratoryId &&
    record.environment === caller.environment &&
    record.orderId === orderId &&
    record.resultId === resultId
  );
}

/**
 * GET …/report/document: every use is authorized again on the server — the record must have been
 * issued to this key for this order and result and be unexpired, and the result's own
 * authorization (client, environment, order, released version, the order's program) must still
 * hold. A version superseded after the record was issued voids it: the partner asks again and
 * sees the lineage first. Every refusal is 404 `not_found`; the record is not consumed.
 */
export async function getReportDocument(db: Database, caller: Caller, input: { orderId: string; resultId: string; retrieval_id: string }, now = new Date()): Promise<ReportDocument> {
  const [record] = await db.select().from(reportRetrievals).where(eq(reportRetrievals.id, input.retrieval_id));
  if (!record || !issuedFor(record, caller, input.orderId, input.resultId)) throw notValid();
  if (record.expiresAt.getTime() <= now.getTime()) {
    throw new PartnerError('not_found', 'This report retrieval path has expired; ask GET …/report for a new one.');
  }
  const { order, row } = await findReleasedResult(db, caller, input.orderId, input.resultId);
  if (order.programId !== record.programId) throw notValid();
  if ((await supersededBy(db, row.id)) !== record.supersededByResultId) {
    throw new PartnerError('not_found', 'A newer result version superseded this one after the retrieval path was issued; read the results, then ask GET …/report again.');
  }
  if (!row.reportDocument || !row.reportContentType) throw reportNotModeled();
  return { order_id: order.id, result_id: row.id, content_type: row.reportContentType, content_base64: row.reportDocument };
}
