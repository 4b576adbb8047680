import { receiveSpecimen as operation } from '../../laboratory-operations/specimens';
import { receiveInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const receive = operatorProcedure.input(receiveInput).mutation(({ ctx, input }) => operation(ctx.db, input));
