import { shipSpecimen as operation } from '../../laboratory-operations/specimens';
import { orderOperationInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const ship = operatorProcedure.input(orderOperationInput).mutation(({ ctx, input }) => operation(ctx.db, input));
