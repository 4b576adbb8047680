import { acknowledgeOrder as operation } from '../../laboratory-operations/transmission';
import { acknowledgeInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const acknowledge = operatorProcedure.input(acknowledgeInput).mutation(({ ctx, input }) => operation(ctx.db, input));
