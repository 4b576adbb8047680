import { ok } from '../../http/envelope';
import { listServiceableLocations } from '../../locations/locations';
import { scopedProcedure } from '../../trpc';
import { listLocationsInput, listLocationsMeta, listLocationsOutput } from './list-locations.types';

export const listLocations = scopedProcedure('serviceability:read')
  .meta(listLocationsMeta)
  .input(listLocationsInput)
  .output(listLocationsOutput)
  .query(async ({ ctx }) => ok(ctx, await listServiceableLocations(ctx.db, ctx.caller), null));
