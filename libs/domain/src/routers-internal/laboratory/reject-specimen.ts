import { rejectSpecimen as operation } from '../../laboratory-operations/specimens';
import { rejectSpecimenInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const rejectSpecimen = operatorProcedure.input(rejectSpecimenInput).mutation(({ ctx, input }) => operation(ctx.db, input));
