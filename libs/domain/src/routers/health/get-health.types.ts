import { envelopeOf } from '../../http/envelope';
import { strictInput } from '../../common-schemas';
import { healthSchema } from '../../health/health.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const getHealthMeta: PartnerProcedureMeta = {
  scope: 'none',
  openapi: {
    method: 'GET',
    path: '/v1/health',
    tags: ['Health'],
    summary: 'Check credentials and environment',
    description: 'Answers 200 for any valid, active API key and tells which environment the key belongs to.',
  },
};
export const getHealthInput = strictInput({});
export const getHealthOutput = envelopeOf(healthSchema);
