import { failTransmission as operation } from '../../laboratory-operations/transmission';
import { failTransmissionInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const failTransmission = operatorProcedure.input(failTransmissionInput).mutation(({ ctx, input }) => operation(ctx.db, input));
