import { LIMITS } from '@lop/contract';
import { z } from 'zod';
import { strictInput, textSchema } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { serviceabilitySchema } from '../../serviceability/serviceability.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const checkServiceabilityMeta: PartnerProcedureMeta = {
  scope: 'serviceability:read',
  openapi: {
    method: 'POST',
    path: '/v1/serviceability',
    tags: ['Serviceability'],
    summary: 'Check whether a test can be fulfilled',
    description: 'Answers `serviceable` with stable reason codes. Unknown and ungranted programs give the same reason, `program_not_available`.',
  },
};
export const checkServiceabilityInput = strictInput({
  program_id: z.uuid(),
  item_id: z.uuid(),
  region: textSchema(LIMITS.region).optional().meta({ description: 'Max 80 characters.' }),
  collection: textSchema(LIMITS.collection).optional().meta({ description: 'Collection method, e.g. in_person_draw. Max 40 characters.' }),
}).meta({ examples: [{ program_id: '00000000-0000-4000-8000-000000000001', item_id: '00000000-0000-4000-8000-000000000002', region: 'US-CA', collection: 'in_person_draw' }] });
export const checkServiceabilityOutput = envelopeOf(serviceabilitySchema);
