import { pathId } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { simulateBodySchema, simulationResultSchema } from '../../sandbox/sandbox.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const simulateOrderMeta: PartnerProcedureMeta = {
  scope: 'orders:write',
  errors: ['not_found', 'simulation_not_allowed', 'rate_limited'],
  openapi: {
    method: 'POST',
    path: '/v1/sandbox/orders/{orderId}/simulate',
    tags: ['Sandbox'],
    summary: 'Advance a sandbox order through a scenario',
    description:
      "Applies the scenario's steps to a synthetic order through the same laboratory operations a real laboratory update uses, and reports `events_emitted`: the number of events added to your stream (read them from GET /v1/events). Every scenario starts from a newly created order. Send `steps` to advance only that many steps from where the order is in the scenario (e.g. `1` to walk it step by step); without it every remaining step runs. A call applies all its steps or none. 422 `simulation_not_allowed` with `details[0].issue`: `production_key`, `order_not_synthetic`, `scenario_not_applicable` (the order is not in the state the next step needs, e.g. it was cancelled or another scenario moved it) or `scenario_completed` (every step already ran on this order). Another client's order, or a malformed id, is 404.",
  },
};
export const simulateOrderInput = simulateBodySchema.extend({ orderId: pathId('Identifier of a sandbox order.') }).meta({
  examples: [{ scenario: 'happy_path' }],
});
export const simulateOrderOutput = envelopeOf(simulationResultSchema);
