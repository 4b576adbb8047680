import { ok } from '../../http/envelope';
import { getLaboratoryProfile } from '../../laboratory/laboratory';
import { scopedProcedure } from '../../trpc';
import { getLabInput, getLabMeta, getLabOutput } from './get-lab.types';

export const getLab = scopedProcedure('catalog:read')
  .meta(getLabMeta)
  .input(getLabInput)
  .output(getLabOutput)
  .query(async ({ ctx }) => ok(ctx, await getLaboratoryProfile(ctx.db, ctx.caller)));
