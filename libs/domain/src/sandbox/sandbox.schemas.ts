import { eventTypeSchema, lifecycleDetailSchema, lifecycleSchema, nextActionSchema } from '@lop/contract';
import { z } from 'zod';
import { jsonInteger } from '../common-schemas';
import { createOrderBodySchema } from '../orders/orders.schemas';
import { SCENARIO_NAMES } from './scenario-definitions';

export const FIXTURE_CONTRACTS = ['minimal', 'provider', 'patient', 'aoe'] as const;
export type FixtureContract = (typeof FIXTURE_CONTRACTS)[number];
export const fixtureContractSchema = z.enum(FIXTURE_CONTRACTS).meta({ id: 'FixtureContract' });

export const orderFixtureSchema = z
  .object({
    contract: fixtureContractSchema,
    available: z.boolean().meta({ description: 'False when none of your granted sandbox tests has requirements of this kind; `body` is then null.' }),
    description: z.string(),
    body: createOrderBodySchema.nullable().meta({
      description:
        'A request body for POST /v1/orders, valid as it is. `external_order_id` is generated afresh on every listing: set your own unique value for each order you place. `external_subject_id` is a synthetic subject the sandbox keeps registered for your API client.',
    }),
    requirements_path: z.string().nullable().meta({ description: 'Relative path of the requirements profile the body was built from.' }),
    unavailable_reason: z.string().nullable(),
  })
  .meta({ id: 'SandboxOrderFixture', description: 'A synthetic request template for one ordering contract.' });
export type OrderFixture = z.infer<typeof orderFixtureSchema>;

export const scenarioSchema = z
  .object({
    scenario: z.string().meta({ description: 'Name to pass to simulate, e.g. `happy_path`.' }),
    steps: z.number().int().meta({ description: 'Number of steps.' }),
    events: z.array(eventTypeSchema).meta({ description: 'Event types the scenario emits on a newly created order, in order.' }),
    description: z.string(),
    step_names: z.array(z.string()),
    step_details: z.array(
      z.object({
        step: z.number().int().min(1),
        name: z.string(),
        operation: z.string().meta({ description: 'The laboratory operation the step performs.' }),
        description: z.string(),
        requires_lifecycle_detail: lifecycleDetailSchema.meta({ description: 'The state the order must be in for this step.' }),
        events: z.array(eventTypeSchema),
      }),
    ),
    ends_in: lifecycleDetailSchema.meta({ description: 'The lifecycle_detail of the order after the last step.' }),
  })
  .meta({ id: 'SandboxScenario' });
export type Scenario = z.infer<typeof scenarioSchema>;

export const simulateBodySchema = z.strictObject({
  scenario: z.enum(SCENARIO_NAMES).meta({ description: 'A scenario from GET /v1/sandbox/scenarios.' }),
  steps: jsonInteger({ min: 1, max: 1000 })
    .optional()
    .meta({ description: 'Advance only this many steps from where the order is in the scenario (e.g. 1 to walk it step by step). Omitted: every remaining step.' }),
});

export const simulationResultSchema = z
  .object({
    order_id: z.uuid(),
    scenario: z.string(),
    events_emitted: z.number().int().meta({ description: 'Number of events this call added to your event stream.' }),
    event_types: z.array(eventTypeSchema).meta({ description: 'Types of those events, in stream order.' }),
    steps_applied: z.number().int().meta({ description: 'Steps applied by this call.' }),
    steps_completed: z.number().int().meta({ description: 'Steps of the scenario applied to this order so far, this call included.' }),
    steps_remaining: z.number().int(),
    applied_steps: z.array(z.object({ step: z.number().int().min(1), name: z.string(), events: z.array(eventTypeSchema) })),
    lifecycle: lifecycleSchema,
    lifecycle_detail: lifecycleDetailSchema,
    next_action: nextActionSchema,
  })
  .meta({ id: 'SimulationResult' });
export type SimulationResult = z.infer<typeof simulationResultSchema>;
