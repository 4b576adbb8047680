import { ok } from '../../http/envelope';
import { simulateScenario } from '../../sandbox/simulate';
import { partnerProcedure } from '../../trpc';
import { simulateOrderInput, simulateOrderMeta, simulateOrderOutput } from './simulate-order.types';

export const simulateOrder = partnerProcedure(simulateOrderMeta)
  .input(simulateOrderInput)
  .output(simulateOrderOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await ctx.writeGate.run(ctx.caller, () => simulateScenario(ctx.db, ctx.caller, { orderId: input.orderId, scenario: input.scenario, steps: input.steps }))));
