import { transmitOrder as operation } from '../../laboratory-operations/transmission';
import { orderOperationInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const transmit = operatorProcedure.input(orderOperationInput).mutation(({ ctx, input }) => operation(ctx.db, input));
