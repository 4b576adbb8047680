import { ok } from '../../http/envelope';
import { checkServiceability as check } from '../../serviceability/serviceability';
import { partnerProcedure } from '../../trpc';
import { checkServiceabilityInput, checkServiceabilityMeta, checkServiceabilityOutput } from './check-serviceability.types';

export const checkServiceability = partnerProcedure(checkServiceabilityMeta)
  .input(checkServiceabilityInput)
  .output(checkServiceabilityOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await check(ctx.db, ctx.caller, input)));
