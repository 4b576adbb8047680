import { resolveException as operation } from '../../laboratory-operations/exceptions';
import { resolveExceptionInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const resolveException = operatorProcedure.input(resolveExceptionInput).mutation(({ ctx, input }) => operation(ctx.db, input));
