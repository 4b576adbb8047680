import { ok } from '../../http/envelope';
import { getResult as get } from '../../results/results';
import { scopedProcedure } from '../../trpc';
import { getResultInput, getResultMeta, getResultOutput } from './get-result.types';

export const getResult = scopedProcedure('results:read')
  .meta(getResultMeta)
  .input(getResultInput)
  .output(getResultOutput)
  .query(async ({ ctx, input }) => ok(ctx, await get(ctx.db, ctx.caller, input.orderId, input.resultId)));
