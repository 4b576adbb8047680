import { ok } from '../../http/envelope';
import { listGrantedPrograms, toProgram } from '../../programs/programs';
import { partnerProcedure } from '../../trpc';
import { listProgramsInput, listProgramsMeta, listProgramsOutput } from './list-programs.types';

export const listPrograms = partnerProcedure(listProgramsMeta)
  .input(listProgramsInput)
  .output(listProgramsOutput)
  .query(async ({ ctx }) => ok(ctx, (await listGrantedPrograms(ctx.db, ctx.caller)).map(toProgram), null));
