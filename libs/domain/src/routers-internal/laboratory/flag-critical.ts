import { flagCritical as operation } from '../../laboratory-operations/result-release';
import { flagCriticalInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const flagCritical = operatorProcedure.input(flagCriticalInput).mutation(({ ctx, input }) => operation(ctx.db, input));
