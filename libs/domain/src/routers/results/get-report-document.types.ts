import { z } from 'zod';
import { pathId, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { reportDocumentSchema } from '../../results/results.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const getReportDocumentMeta: PartnerProcedureMeta = {
  reads: 'replica',
  audit: { orderId: 'orderId', resourceId: 'resultId', details: ['retrieval_id'] },
  scope: 'results:read',
  errors: ['not_found', 'report_not_modeled'],
  openapi: {
    method: 'GET',
    path: '/v1/orders/{orderId}/results/{resultId}/report/document',
    tags: ['Results'],
    summary: 'Retrieve a report document',
    description:
      "Follow the `retrieval_path` from the report endpoint as it is, with the same `Authorization`. The path names a retrieval record kept on the server; it carries no signature, expiry or token and is worthless without the key that asked for it. Every use is authorized again: the record must have been issued to this API key for this order and result, within the last five minutes, and the result's own authorization (client, environment, order, program, released version) must still hold; a version superseded after the record was issued voids it. Anything else is 404 `not_found` (an expired record says so); ask the report endpoint again for a new path. The document comes back base64-encoded with the media type the laboratory supplied.",
  },
};
export const getReportDocumentInput = strictInput({
  orderId: pathId('Order identifier.'),
  resultId: pathId('Result version identifier.'),
  retrieval_id: z.uuid().meta({ description: 'From the retrieval path: the retrieval record the report endpoint issued to this API key.' }),
});
export const getReportDocumentOutput = envelopeOf(reportDocumentSchema);
