import { recordResult as operation } from '../../laboratory-operations/result-recording';
import { recordResultInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const recordResult = operatorProcedure.input(recordResultInput).mutation(({ ctx, input }) => operation(ctx.db, input));
