import { acceptOrder as operation } from '../../laboratory-operations/acceptance';
import { acceptInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const accept = operatorProcedure.input(acceptInput).mutation(({ ctx, input }) => operation(ctx.db, input));
