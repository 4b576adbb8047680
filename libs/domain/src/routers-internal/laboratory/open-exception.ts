import { openException as operation } from '../../laboratory-operations/exceptions';
import { openExceptionInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const openException = operatorProcedure.input(openExceptionInput).mutation(({ ctx, input }) => operation(ctx.db, input));
