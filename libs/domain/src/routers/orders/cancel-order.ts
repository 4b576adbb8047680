import { ok } from '../../http/envelope';
import { cancelOrder as cancel } from '../../orders/orders';
import { partnerProcedure } from '../../trpc';
import { cancelOrderInput, cancelOrderMeta, cancelOrderOutput } from './cancel-order.types';

export const cancelOrder = partnerProcedure(cancelOrderMeta)
  .input(cancelOrderInput)
  .output(cancelOrderOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await ctx.writeGate.run(ctx.caller, () => cancel(ctx.db, ctx.caller, input.orderId))));
