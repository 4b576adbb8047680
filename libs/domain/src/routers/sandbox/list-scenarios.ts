import { ok } from '../../http/envelope';
import { listScenarios as list } from '../../sandbox/scenarios';
import { partnerProcedure } from '../../trpc';
import { listScenariosInput, listScenariosMeta, listScenariosOutput } from './list-scenarios.types';

export const listScenarios = partnerProcedure(listScenariosMeta)
  .input(listScenariosInput)
  .output(listScenariosOutput)
  .query(({ ctx }) => ok(ctx, list(), null));
