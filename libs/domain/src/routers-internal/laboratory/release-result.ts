import { releaseResult as operation } from '../../laboratory-operations/result-release';
import { releaseResultInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const releaseResult = operatorProcedure.input(releaseResultInput).mutation(({ ctx, input }) => operation(ctx.db, input));
