import { showOrder as operation } from '../../laboratory-operations/operator-views';
import { showOrderInput } from '../../laboratory-operations/laboratory-operations.schemas';
import { operatorProcedure } from '../trpc';

export const showOrder = operatorProcedure.input(showOrderInput).query(({ ctx, input }) => operation(ctx.db, input));
