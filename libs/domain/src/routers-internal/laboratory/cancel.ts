import { cancelByLaboratory as operation } from '../../laboratory-operations/cancellation';
import { orderOperationInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const cancel = operatorProcedure.input(orderOperationInput).mutation(({ ctx, input }) => operation(ctx.db, input));
