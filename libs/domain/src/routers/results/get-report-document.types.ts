import { z } from 'zod';
import { pathId, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { reportDocumentSchema } from '../../results/results.schemas';
import type { ProcedureMeta } from '../../trpc';

export const getReportDocumentMeta: ProcedureMeta = {
  scope: 'results:read',
  errors: ['not_found', 'report_not_modeled'],
  openapi: {
    method: 'GET',
    path: '/v1/orders/{orderId}/results/{resultId}/report/document',
    tags: ['Results'],
    summary: 'Retrieve a report document',
    description:
      'Follow the `retrieval_path` from the report endpoint as it is. It is checked in full on every use: same API key, unexpired (five minutes), untampered, and the same authorization as the result itself (client, environment, order, released version). Anything else is 404 `not_found`. The document comes back base64-encoded with the media type the laboratory supplied.',
  },
};
export const getReportDocumentInput = strictInput({
  orderId: pathId('Order identifier.'),
  resultId: pathId('Result version identifier.'),
  expires: z.string().max(32).meta({ description: 'From the retrieval path.' }),
  signature: z.string().max(128).meta({ description: 'From the retrieval path.' }),
});
export const getReportDocumentOutput = envelopeOf(reportDocumentSchema);
