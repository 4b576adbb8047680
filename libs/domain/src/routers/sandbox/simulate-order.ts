import { ok } from '../../http/envelope';
import { simulateScenario } from '../../sandbox/simulate';
import { scopedProcedure } from '../../trpc';
import { simulateOrderInput, simulateOrderMeta, simulateOrderOutput } from './simulate-order.types';

export const simulateOrder = scopedProcedure('orders:write')
  .meta(simulateOrderMeta)
  .input(simulateOrderInput)
  .output(simulateOrderOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await ctx.writeGate.run(ctx.caller, () => simulateScenario(ctx.db, ctx.caller, { orderId: input.orderId, scenario: input.scenario, steps: input.steps }))));
