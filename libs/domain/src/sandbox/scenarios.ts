import type { EventType, LifecycleDetail } from '@lop/contract';
import type { Scenario } from './sandbox.schemas';
import { nextState, orderEventFor } from '../orders/lifecycle';
import { SCENARIO_DEFINITIONS, type ScenarioDefinition, type ScenarioStep } from './scenario-definitions';
import { expectStep, type ModelState } from './step-operations';

/** One step as planned: the state it needs, the state it leaves, and the events it emits. */
export interface PlannedStep {
  step: ScenarioStep;
  from: LifecycleDetail;
  to: LifecycleDetail;
  events: EventType[];
}

export interface ScenarioPlan extends ScenarioDefinition {
  planned: PlannedStep[];
  events: EventType[];
  startsFrom: LifecycleDetail;
  endsIn: LifecycleDetail;
}

export const SCENARIO_START: LifecycleDetail = 'received';

/**
 * Walks the steps through the transition table from a newly created order. A step the table (or
 * the operation) refuses is a broken definition and throws at load, so no scenario can be
 * listed that cannot run.
 */
export function planScenario(definition: ScenarioDefinition): ScenarioPlan {
  let state: ModelState = { detail: SCENARIO_START, recorded: null };
  const planned = definition.steps.map((s, i): PlannedStep => {
    const expectation = expectStep(state, s);
    const where = `scenario ${definition.scenario}, step ${i + 1} (${s.name})`;
    if (expectation.refusal) throw new Error(`${where}: ${expectation.refusal}`);
    const from = state.detail;
    let to: LifecycleDetail;
    try {
      to = expectation.transition ? nextState(from, expectation.transition) : from;
    } catch (error) {
      throw new Error(`${where}: ${(error as Error).message}`);
    }
    // changeOrderState's rule: a change of lifecycle or next_action is announced, as order.cancelled
    // for a cancellation, unless the step's integration.action_required already announced it.
    const lifecycleEvent = orderEventFor(from, to, expectation.events);
    state = { detail: to, recorded: expectation.recorded === undefined ? state.recorded : expectation.recorded };
    return { step: s, from, to, events: [...expectation.events, ...(lifecycleEvent ? [lifecycleEvent] : [])] };
  });
  return {
    ...definition,
    planned,
    events: planned.flatMap((p) => p.events),
    startsFrom: SCENARIO_START,
    endsIn: planned.at(-1)?.to ?? SCENARIO_START,
  };
}

export const SCENARIOS: ScenarioPlan[] = SCENARIO_DEFINITIONS.map(planScenario);

export function findScenario(name: string): ScenarioPlan | undefined {
  return SCENARIOS.find((s) => s.scenario === name);
}

/** The partner-facing Sandbox scenario, all of it derived from the plan. */
export function describeScenario(plan: ScenarioPlan): Scenario {
  return {
    scenario: plan.scenario,
    steps: plan.planned.length,
    events: plan.events,
    description: plan.description,
    step_names: plan.planned.map((p) => p.step.name),
    step_details: plan.planned.map((p, i) => ({
      step: i + 1,
      name: p.step.name,
      operation: p.step.operation,
      description: p.step.description,
      requires_lifecycle_detail: p.from,
      events: p.events,
    })),
    ends_in: plan.endsIn,
  };
}

export function listScenarios(): Scenario[] {
  return SCENARIOS.map(describeScenario);
}
