import { pathId, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { programSchema } from '../../programs/programs.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const getProgramMeta: PartnerProcedureMeta = {
  reads: 'replica',
  scope: 'programs:read',
  errors: ['not_found'],
  openapi: {
    method: 'GET',
    path: '/v1/programs/{programId}',
    tags: ['Programs'],
    summary: 'Read one granted program',
    description: 'Unknown and ungranted programs are both 404 for the calling key.',
  },
};
export const getProgramInput = strictInput({ programId: pathId('Program identifier.') });
export const getProgramOutput = envelopeOf(programSchema);
