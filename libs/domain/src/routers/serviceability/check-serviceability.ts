import { ok } from '../../http/envelope';
import { checkServiceability as check } from '../../serviceability/serviceability';
import { scopedProcedure } from '../../trpc';
import { checkServiceabilityInput, checkServiceabilityMeta, checkServiceabilityOutput } from './check-serviceability.types';

export const checkServiceability = scopedProcedure('serviceability:read')
  .meta(checkServiceabilityMeta)
  .input(checkServiceabilityInput)
  .output(checkServiceabilityOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await check(ctx.db, ctx.caller, input)));
