import { LIMITS } from '@lop/contract';
import { strictInput, textSchema } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { subjectLinkSchema } from '../../subjects/subjects.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const putSubjectMeta: PartnerProcedureMeta = {
  scope: 'subjects:write',
  openapi: {
    method: 'PUT',
    path: '/v1/subjects/{externalSubjectId}',
    tags: ['Subjects'],
    summary: 'Register an opaque subject reference',
    description:
      'Links your own opaque subject identifier so orders can reference it. The body is an empty JSON object (or no body): names, dates of birth and clinical detail are refused here by construction. Repeating the call changes nothing.',
  },
};
// Only the path parameter: any body field is an unknown field, so personal data cannot be sent here.
export const putSubjectInput = strictInput({
  externalSubjectId: textSchema(LIMITS.externalSubjectId).meta({ description: 'Your opaque subject identifier (max 190 characters).' }),
});
export const putSubjectOutput = envelopeOf(subjectLinkSchema);
