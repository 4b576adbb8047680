import { findActiveItem } from '../../catalog/catalog';
import { notFound } from '../../http/errors';
import { ok } from '../../http/envelope';
import { getGrantedProgram } from '../../programs/programs';
import { resolveRequirements } from '../../requirements/requirements';
import { partnerProcedure } from '../../trpc';
import { getRequirementsInput, getRequirementsMeta, getRequirementsOutput } from './get-requirements.types';

export const getRequirements = partnerProcedure(getRequirementsMeta)
  .input(getRequirementsInput)
  .output(getRequirementsOutput)
  .query(async ({ ctx, input }) => {
    const program = await getGrantedProgram(ctx.db, ctx.caller, input.programId);
    const item = input.item_id ? await findActiveItem(ctx.db, program.id, input.item_id) : null;
    if (input.item_id && !item) throw notFound('catalog item in this program');
    const { profile } = await resolveRequirements(ctx.db, ctx.caller, program, item, input.region);
    return ok(ctx, profile);
  });
