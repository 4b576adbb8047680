import { orderScenarioProgress } from '../../console/scenario-progress';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { listOrderScenariosInput, listOrderScenariosMeta, listOrderScenariosOutput } from './list-order-scenarios.types';

/** Where the order stands in each sandbox scenario, from the server's progress records (sandbox console only). */
export const listOrderScenarios = partnerProcedure(listOrderScenariosMeta)
  .input(listOrderScenariosInput)
  .output(listOrderScenariosOutput)
  .query(async ({ ctx, input }) => ok(ctx, await orderScenarioProgress(ctx.db, ctx.caller, input.orderId)));
