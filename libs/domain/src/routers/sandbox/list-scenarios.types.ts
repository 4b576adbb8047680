import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { scenarioSchema } from '../../sandbox/sandbox.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const listScenariosMeta: PartnerProcedureMeta = {
  scope: 'none',
  openapi: {
    method: 'GET',
    path: '/v1/sandbox/scenarios',
    tags: ['Sandbox'],
    summary: 'List sandbox scenarios',
    description:
      'Every scenario POST /v1/sandbox/orders/{orderId}/simulate can run, with its number of `steps` and the `events` it emits on a newly created order, in order. `step_details` names each step, the laboratory operation it performs, the `lifecycle_detail` the order must be in for it, and the events it emits, so an order can be walked one step at a time. Scenarios are deterministic: the same scenario on a new order emits the same event types in the same order.',
  },
};
export const listScenariosInput = strictInput({});
export const listScenariosOutput = envelopeOf(z.array(scenarioSchema));
