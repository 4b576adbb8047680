import { pathId, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { resultCollectionSchema } from '../../results/results.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const listResultsMeta: PartnerProcedureMeta = {
  reads: 'replica',
  audit: { orderId: 'orderId' },
  scope: 'results:read',
  errors: ['not_found'],
  openapi: {
    method: 'GET',
    path: '/v1/orders/{orderId}/results',
    tags: ['Results'],
    summary: 'Read the results of an order',
    description:
      'Released result versions only. `pending` is true (with `pending_reason`) while a result is expected but not released, or a newer version awaits release. `version_lineage` lists every released version oldest first: a later version supersedes the previous one (`superseded_by_result_id` set, `is_current` false) and the superseded one stays retrievable. Treat `current_result_id`, the highest released version, as authoritative. Orders of other clients or environments are 404.',
  },
};
export const listResultsInput = strictInput({ orderId: pathId('Order identifier.') });
export const listResultsOutput = envelopeOf(resultCollectionSchema);
