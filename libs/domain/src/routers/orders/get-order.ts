import { ok } from '../../http/envelope';
import { getOrder as get } from '../../orders/orders';
import { partnerProcedure } from '../../trpc';
import { getOrderInput, getOrderMeta, getOrderOutput } from './get-order.types';

export const getOrder = partnerProcedure(getOrderMeta)
  .input(getOrderInput)
  .output(getOrderOutput)
  .query(async ({ ctx, input }) => ok(ctx, await get(ctx.db, ctx.caller, input.orderId)));
