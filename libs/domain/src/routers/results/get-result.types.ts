import { pathId, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { resultVersionSchema } from '../../results/results.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const getResultMeta: PartnerProcedureMeta = {
  reads: 'replica',
  audit: { orderId: 'orderId', resourceId: 'resultId' },
  scope: 'results:read',
  errors: ['not_found'],
  openapi: {
    method: 'GET',
    path: '/v1/orders/{orderId}/results/{resultId}',
    tags: ['Results'],
    summary: 'Read one result version',
    description:
      'One released version, superseded or current, with its observations exactly as the laboratory supplied them (`loinc` is `not_modeled` on each). An unreleased, unknown or another order’s version is 404.',
  },
};
export const getResultInput = strictInput({ orderId: pathId('Order identifier.'), resultId: pathId('Result version identifier.') });
export const getResultOutput = envelopeOf(resultVersionSchema);
