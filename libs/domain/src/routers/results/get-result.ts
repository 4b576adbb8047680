import { ok } from '../../http/envelope';
import { getResult as get } from '../../results/results';
import { partnerProcedure } from '../../trpc';
import { getResultInput, getResultMeta, getResultOutput } from './get-result.types';

export const getResult = partnerProcedure(getResultMeta)
  .input(getResultInput)
  .output(getResultOutput)
  .query(async ({ ctx, input }) => ok(ctx, await get(ctx.db, ctx.caller, input.orderId, input.resultId)));
