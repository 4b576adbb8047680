import { ok } from '../../http/envelope';
import { getLaboratoryProfile } from '../../laboratory/laboratory';
import { partnerProcedure } from '../../trpc';
import { getLabInput, getLabMeta, getLabOutput } from './get-lab.types';

export const getLab = partnerProcedure(getLabMeta)
  .input(getLabInput)
  .output(getLabOutput)
  .query(async ({ ctx }) => ok(ctx, await getLaboratoryProfile(ctx.db, ctx.caller)));
