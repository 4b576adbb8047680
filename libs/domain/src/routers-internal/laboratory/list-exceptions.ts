import { listOperatorExceptions as operation } from '../../laboratory-operations/exceptions';
import { orderOperationInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const listExceptions = operatorProcedure.input(orderOperationInput).query(({ ctx, input }) => operation(ctx.db, input));
