import { LIMITS } from '@lop/contract';
import { z } from 'zod';
import { pathId, strictInput, textSchema } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { requirementsProfileSchema } from '../../requirements/requirements.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const getRequirementsMeta: PartnerProcedureMeta = {
  reads: 'replica',
  scope: 'catalog:read',
  errors: ['not_found'],
  openapi: {
    method: 'GET',
    path: '/v1/programs/{programId}/requirements',
    tags: ['Catalog'],
    summary: 'Read ordering requirements',
    description:
      'What an order must carry for this program, optionally narrowed to one test (`item_id`) and one region. A facet the laboratory has not configured is `not_configured` and requires nothing. Order creation enforces exactly this profile.',
  },
};
export const getRequirementsInput = strictInput({
  programId: pathId('Program identifier.'),
  item_id: z.uuid().optional().meta({ description: 'Narrow the profile to one catalog item of the program.' }),
  region: textSchema(LIMITS.region).optional().meta({ description: 'Narrow the profile to one region (max 80 characters).' }),
});
export const getRequirementsOutput = envelopeOf(requirementsProfileSchema);
