import { collectSpecimen as operation } from '../../laboratory-operations/specimens';
import { collectInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const collect = operatorProcedure.input(collectInput).mutation(({ ctx, input }) => operation(ctx.db, input));
