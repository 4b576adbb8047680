import { listActiveItems, toCatalogItem } from '../../catalog/catalog';
import { ok } from '../../http/envelope';
import { getGrantedProgram } from '../../programs/programs';
import { partnerProcedure } from '../../trpc';
import { getCatalogInput, getCatalogMeta, getCatalogOutput } from './get-catalog.types';

export const getCatalog = partnerProcedure(getCatalogMeta)
  .input(getCatalogInput)
  .output(getCatalogOutput)
  .query(async ({ ctx, input }) => {
    const program = await getGrantedProgram(ctx.db, ctx.caller, input.programId);
    return ok(ctx, (await listActiveItems(ctx.db, program.id)).map(toCatalogItem), null);
  });
