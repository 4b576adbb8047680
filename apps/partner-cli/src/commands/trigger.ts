import { randomUUID } from 'node:crypto';
import { ApiError, must, requireSandbox, UsageError, type Api, type EventType, type Schemas } from '../api';
import type { paths } from '../generated/partner-api';
import { fields, json, type Output } from '../output';

/**
 * `lop trigger <scenario>`: a sandbox order from a fixture (its subject registered first), the
 * scenario run on it through the simulate endpoint, then the order read back. Sandbox keys only:
 * with a production key the order would be real.
 *
 * `lop trigger <event_type>` (as Stripe's CLI triggers an event): the scenario whose steps reach
 * that event soonest, run just up to the step that emits it, chosen from the service's own list
 * of scenarios (GET /v1/sandbox/scenarios names each step's events), so a new scenario is picked
 * up without a change here. `order.created` is emitted by creating the order itself.
 */

export interface TriggerOptions {
  fixture: string;
  steps?: number;
  /** Advance this existing sandbox order instead of creating one. */
  order?: string;
  json: boolean;
}

export interface TriggerReport {
  order_id: string;
  external_order_id: string;
  created: boolean;
  fixture: string | null;
  /** Null for `lop trigger order.created`: creating the order is all it takes. */
  scenario: string | null;
  /** The event type asked for, when triggered by one. */
  event_type: EventType | null;
  steps_applied: number;
  steps_completed: number;
  steps_remaining: number;
  /** In stream order: order.created (when this run created the order), then the scenario's. */
  events: EventType[];
  lifecycle: Schemas['Lifecycle'];
  lifecycle_detail: Schemas['LifecycleDetail'];
  next_action: Schemas['NextAction'];
}

type SimulateBody = NonNullable<paths['/api/public/partner/v1/sandbox/orders/{orderId}/simulate']['post']['requestBody']>['content']['application/json'];

/** What creating a sandbox order emits, before any scenario step. */
const CREATION_EVENT: EventType = 'order.created';

/** Event types are `noun.verb`; scenario names are snake_case words. */
export const looksLikeEventType = (name: string) => name.includes('.');

/**
 * The most direct way to an event type: the scenario and step count that emit it soonest (fewest
 * steps; then the shorter scenario; then the service's order), or null when no scenario does.
 * `order.created` needs no step at all.
 */
export function scenarioFor(type: string, scenarios: Schemas['SandboxScenario'][]): { scenario: string | null; steps: number } | null {
  if (type === CREATION_EVENT) return { scenario: null, steps: 0 };
  let best: { scenario: string; steps: number; length: number } | null = null;
  for (const s of scenarios) {
    const step = s.step_details.findIndex((detail) => detail.events.includes(type as EventType));
    if (step < 0) continue;
    const candidate = { scenario: s.scenario, steps: step + 1, length: s.steps };
    if (!best || candidate.steps < best.steps || (candidate.steps === best.steps && candidate.length < best.length)) best = candidate;
  }
  return best && { scenario: best.scenario, steps: best.steps };
}

/** Every event type lop trigger can make happen with these scenarios, in the order the service lists them. */
export function triggerableTypes(scenarios: Schemas['SandboxScenario'][]): string[] {
  return [...new Set([CREATION_EVENT, ...scenarios.flatMap((s) => s.step_details.flatMap((detail) => detail.events))])];
}

export async function trigger(api: Api, scenarioOrType: string, options: TriggerOptions, output: Output): Promise<number> {
  await requireSandbox(api, 'lop trigger');
  const { client } = api;

  const scenarios = must(await client.GET('/api/public/partner/v1/sandbox/scenarios')).data;
  let scenario: string | null = scenarioOrType;
  let steps = options.steps;
  let eventType: EventType | null = null;
  if (looksLikeEventType(scenarioOrType)) {
    const route = scenarioFor(scenarioOrType, scenarios);
    if (!route) {
      throw new UsageError(`no scenario emits ${scenarioOrType}; lop trigger takes one of these event types: ${triggerableTypes(scenarios).join(', ')} (or a scenario: lop scenarios lists them)`, 'unknown_event_type');
    }
    // The step count is the scenario's path from a new order: an existing order or another count would not lead there.
    if (options.order !== undefined || options.steps !== undefined) throw new UsageError(`--order and --steps take a scenario, not an event type: lop trigger ${route.scenario ?? 'happy_path'} …`);
    ({ scenario, steps } = route);
    eventType = scenarioOrType as EventType;
  } else if (!scenarios.some((s) => s.scenario === scenario)) {
    throw new UsageError(`unknown scenario ${scenario}; one of: ${scenarios.map((s) => s.scenario).join(', ')} (lop scenarios describes them; an event type such as result.critical works too)`);
  }

  let order: Schemas['Order'];
  let fixture: string | null = null;
  if (options.order) {
    order = must(await client.GET('/api/public/partner/v1/orders/{orderId}', { params: { path: { orderId: options.order } } })).data;
  } else {
    const fixtures = must(await client.GET('/api/public/partner/v1/sandbox/order-fixtures')).data;
    const chosen = fixtures.find((f) => f.contract === options.fixture);
    if (!chosen) throw new UsageError(`unknown fixture ${options.fixture}; one of: ${fixtures.map((f) => f.contract).join(', ')} (lop fixtures lists them)`);
    if (!chosen.available || !chosen.body) {
      throw new ApiError(422, 'fixture_unavailable', `the ${chosen.contract} fixture is not available for this key: ${chosen.unavailable_reason ?? 'no body'}`, null, [], null);
    }
    fixture = chosen.contract;
    const body = { ...chosen.body, external_order_id: `lop-${randomUUID()}` };
    must(await client.PUT('/api/public/partner/v1/subjects/{externalSubjectId}', { params: { path: { externalSubjectId: body.external_subject_id } } }));
    order = must(await client.POST('/api/public/partner/v1/orders', { params: { header: { 'Idempotency-Key': randomUUID() } }, body })).data;
  }

  let simulation: Pick<Schemas['SimulationResult'], 'scenario' | 'steps_applied' | 'steps_completed' | 'steps_remaining' | 'event_types'> = {
    scenario: '',
    steps_applied: 0,
    steps_completed: 0,
    steps_remaining: 0,
    event_types: [],
  };
  if (scenario !== null) {
    const simulated = await client.POST('/api/public/partner/v1/sandbox/orders/{orderId}/simulate', {
      params: { path: { orderId: order.order_id } },
      body: { scenario: scenario as SimulateBody['scenario'], ...(steps === undefined ? {} : { steps }) },
    });
    // The order exists even when the scenario is refused: say which one, so it can be looked at.
    if (simulated.error !== undefined && !options.order) output.err(`created order ${order.order_id} (${order.external_order_id}); the scenario did not run:`);
    simulation = must(simulated).data;
  }
  const final = must(await client.GET('/api/public/partner/v1/orders/{orderId}', { params: { path: { orderId: order.order_id } } })).data;

  const report: TriggerReport = {
    order_id: final.order_id,
    external_order_id: final.external_order_id,
    created: !options.order,
    fixture,
    scenario,
    event_type: eventType,
    steps_applied: simulation.steps_applied,
    steps_completed: simulation.steps_completed,
    steps_remaining: simulation.steps_remaining,
    events: [...(options.order ? [] : (['order.created'] as const)), ...simulation.event_types],
    lifecycle: final.lifecycle,
    lifecycle_detail: final.lifecycle_detail,
    next_action: final.next_action,
  };

  if (options.json) {
    output.out(json(report));
    return 0;
  }
  const { style } = output;
  const pairs: [string, string][] = [
    ['order', `${style.bold(report.order_id)}${report.created ? style.dim(`  (created from the ${fixture} fixture)`) : ''}`],
    ['external_order_id', report.external_order_id],
    ...(report.event_type ? ([['event type', `${report.event_type}${report.scenario ? style.dim(`  (the most direct scenario to it: ${report.scenario}, up to step ${report.steps_applied})`) : style.dim('  (creating the order emits it)')}`]] as [string, string][]) : []),
    ...(report.scenario
      ? ([['scenario', `${report.scenario}: ${report.steps_applied} step${report.steps_applied === 1 ? '' : 's'} applied, ${report.steps_completed} done, ${report.steps_remaining} to go`]] as [string, string][])
      : []),
    ['final', `${style.bold(`${report.lifecycle} / ${report.lifecycle_detail}`)}, next_action ${report.next_action}`],
    ['events', `${report.events.length} emitted, in stream order:`],
  ];
  for (const line of fields(style, pairs)) output.out(line);
  const indent = ' '.repeat(Math.max(...pairs.map(([key]) => key.length)) + 2);
  for (const type of report.events) output.out(`${indent}${type}`);
  return 0;
}
