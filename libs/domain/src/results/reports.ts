import { timingSafeEqual } from 'node:crypto';
import type { Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { PartnerError } from '../http/errors';
import type { DataProtector } from '../security/protector';
import { findReleasedResult, resultPath } from './results';
import type { ReportAvailability, ReportDocument } from './results.schemas';

/** How long a report retrieval path stays usable. */
export const REPORT_PATH_TTL_SECONDS = 300;

const reportNotModeled = () =>
  new PartnerError('report_not_modeled', 'The laboratory supplied no report document for this released result; no report is fabricated.');

const refused = () => new PartnerError('not_found', 'This report retrieval path is not valid for this API key; ask GET …/report for a new one.');

/** The signed material binds the path to one key (hence client, laboratory, environment), one order, one result and one expiry. */
function signedMaterial(caller: Caller, orderId: string, resultId: string, expires: string): string {
  return ['report-document', 'v1', caller.keyId, caller.clientId, caller.laboratoryId, caller.environment, orderId, resultId, expires].join('\n');
}

export const reportDocumentPath = (orderId: string, resultId: string) => `${resultPath(orderId, resultId)}/report/document`;

/**
 * GET …/results/{resultId}/report: a short-lived retrieval path only when the laboratory supplied
 * a document for this released version; otherwise an explicit `report_not_modeled` refusal.
 */
export async function getReportAvailability(db: Database, caller: Caller, protector: DataProtector, orderId: string, resultId: string, now = new Date()): Promise<ReportAvailability> {
  const { order, row } = await findReleasedResult(db, caller, orderId, resultId);
  if (!row.reportDocument) throw reportNotModeled();
  const expires = String(Math.floor(now.getTime() / 1000) + REPORT_PATH_TTL_SECONDS);
  const signature = protector.sign(signedMaterial(caller, order.id, row.id, expires));
  return {
    order_id: order.id,
    result_id: row.id,
    report: {
      available: true,
      state: 'available',
      reason: 'The laboratory supplied a report document for this released version.',
      retrieval_path: `${reportDocumentPath(order.id, row.id)}?expires=${expires}&signature=${signature}`,
    },
  };
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * GET …/report/document: the retrieval path is checked again in full on every use — signature
 * for this very key, expiry, then the same authorization as the result itself.
 */
export async function getReportDocument(
  db: Database,
  caller: Caller,
  protector: DataProtector,
  input: { orderId: string; resultId: string; expires: string; signature: string },
  now = new Date(),
): Promise<ReportDocument> {
  if (!/^[1-9][0-9]{0,11}$/.test(input.expires)) throw refused();
  if (!sameText(protector.sign(signedMaterial(caller, input.orderId, input.resultId, input.expires)), input.signature)) throw refused();
  if (Number(input.expires) <= Math.floor(now.getTime() / 1000)) {
    throw new PartnerError('not_found', 'This report retrieval path has expired; ask GET …/report for a new one.');
  }
  const { order, row } = await findReleasedResult(db, caller, input.orderId, input.resultId);
  if (!row.reportDocument || !row.reportContentType) throw reportNotModeled();
  return { order_id: order.id, result_id: row.id, content_type: row.reportContentType, content_base64: row.reportDocument };
}
