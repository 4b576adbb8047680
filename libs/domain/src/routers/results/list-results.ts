import { ok } from '../../http/envelope';
import { listResults as list } from '../../results/results';
import { partnerProcedure } from '../../trpc';
import { listResultsInput, listResultsMeta, listResultsOutput } from './list-results.types';

export const listResults = partnerProcedure(listResultsMeta)
  .input(listResultsInput)
  .output(listResultsOutput)
  .query(async ({ ctx, input }) => ok(ctx, await list(ctx.db, ctx.caller, input.orderId)));
