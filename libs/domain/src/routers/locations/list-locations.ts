import { ok } from '../../http/envelope';
import { listServiceableLocations } from '../../locations/locations';
import { partnerProcedure } from '../../trpc';
import { listLocationsInput, listLocationsMeta, listLocationsOutput } from './list-locations.types';

export const listLocations = partnerProcedure(listLocationsMeta)
  .input(listLocationsInput)
  .output(listLocationsOutput)
  .query(async ({ ctx }) => ok(ctx, await listServiceableLocations(ctx.db, ctx.caller), null));
