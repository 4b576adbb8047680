import { pathId, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { reportAvailabilitySchema } from '../../results/results.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const getReportMeta: PartnerProcedureMeta = {
  audit: { orderId: 'orderId', resourceId: 'resultId' },
  scope: 'results:read',
  errors: ['not_found', 'report_not_modeled'],
  openapi: {
    method: 'GET',
    path: '/v1/orders/{orderId}/results/{resultId}/report',
    tags: ['Results'],
    summary: 'Read report availability',
    description:
      'When the laboratory supplied a report document for this released version: `report.available` true and a `retrieval_path`, relative to base_url (which ends in `/api/public/partner`; a generated client takes the bare origin as its base URL, so prefix that to the path). A call issues a retrieval record on the server, for this API key only, valid for five minutes (a repeated call while more than half of a record’s five minutes is left answers that same record); the path names that record and carries no signature or token. Following it needs the same `Authorization` and re-runs every check of the result itself. No permanent, signed or shareable link exists. Without a document: 404 `report_not_modeled` — no report is ever fabricated. An unreleased or unknown version is 404 `not_found`.',
  },
};
export const getReportInput = strictInput({ orderId: pathId('Order identifier.'), resultId: pathId('Result version identifier.') });
export const getReportOutput = envelopeOf(reportAvailabilitySchema);
