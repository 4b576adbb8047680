import { ok } from '../../http/envelope';
import { getGrantedProgram, toProgram } from '../../programs/programs';
import { partnerProcedure } from '../../trpc';
import { getProgramInput, getProgramMeta, getProgramOutput } from './get-program.types';

export const getProgram = partnerProcedure(getProgramMeta)
  .input(getProgramInput)
  .output(getProgramOutput)
  .query(async ({ ctx, input }) => ok(ctx, toProgram(await getGrantedProgram(ctx.db, ctx.caller, input.programId))));
