import { strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { laboratoryProfileSchema } from '../../laboratory/laboratory.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const getLabMeta: PartnerProcedureMeta = {
  scope: 'catalog:read',
  openapi: {
    method: 'GET',
    path: '/v1/lab',
    tags: ['Laboratory'],
    summary: "Read the laboratory's capability profile",
    description: 'Identity and capabilities as the laboratory declares them. Certifications are reported with state `not_modeled`: a self-declaration, never a verification.',
  },
};
export const getLabInput = strictInput({});
export const getLabOutput = envelopeOf(laboratoryProfileSchema);
