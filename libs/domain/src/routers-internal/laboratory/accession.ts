import { accessionSpecimen as operation } from '../../laboratory-operations/specimens';
import { accessionInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const accession = operatorProcedure.input(accessionInput).mutation(({ ctx, input }) => operation(ctx.db, input));
