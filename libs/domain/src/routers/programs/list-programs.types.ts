import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { programSchema } from '../../programs/programs.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const listProgramsMeta: PartnerProcedureMeta = {
  reads: 'replica',
  scope: 'programs:read',
  openapi: {
    method: 'GET',
    path: '/v1/programs',
    tags: ['Programs'],
    summary: 'List granted programs',
    description: "Programs granted to the key's API client in the key's environment.",
  },
};
export const listProgramsInput = strictInput({});
export const listProgramsOutput = envelopeOf(z.array(programSchema));
