import { randomUUID } from 'node:crypto';
import { ApiError, must, requireSandbox, UsageError, type Api, type EventType, type Schemas } from '../api';
import type { paths } from '../generated/partner-api';
import { fields, json, type Output } from '../output';

/**
 * `lop trigger <scenario>`: a sandbox order from a fixture (its subject registered first), the
 * scenario run on it through the simulate endpoint, then the order read back. Sandbox keys only:
 * with a production key the order would be real.
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
  scenario: string;
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

export async function trigger(api: Api, scenario: string, options: TriggerOptions, output: Output): Promise<number> {
  await requireSandbox(api, 'lop trigger');
  const { client } = api;

  const scenarios = must(await client.GET('/api/public/partner/v1/sandbox/scenarios')).data;
  if (!scenarios.some((s) => s.scenario === scenario)) {
    throw new UsageError(`unknown scenario ${scenario}; one of: ${scenarios.map((s) => s.scenario).join(', ')} (lop scenarios describes them)`);
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

  const simulated = await client.POST('/api/public/partner/v1/sandbox/orders/{orderId}/simulate', {
    params: { path: { orderId: order.order_id } },
    body: { scenario: scenario as SimulateBody['scenario'], ...(options.steps === undefined ? {} : { steps: options.steps }) },
  });
  // The order exists even when the scenario is refused: say which one, so it can be looked at.
  if (simulated.error !== undefined && !options.order) output.err(`created order ${order.order_id} (${order.external_order_id}); the scenario did not run:`);
  const simulation = must(simulated).data;
  const final = must(await client.GET('/api/public/partner/v1/orders/{orderId}', { params: { path: { orderId: order.order_id } } })).data;

  const report: TriggerReport = {
    order_id: final.order_id,
    external_order_id: final.external_order_id,
    created: !options.order,
    fixture,
    scenario: simulation.scenario,
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
    ['scenario', `${report.scenario}: ${report.steps_applied} step${report.steps_applied === 1 ? '' : 's'} applied, ${report.steps_completed} done, ${report.steps_remaining} to go`],
    ['final', `${style.bold(`${report.lifecycle} / ${report.lifecycle_detail}`)}, next_action ${report.next_action}`],
    ['events', `${report.events.length} emitted, in stream order:`],
  ];
  for (const line of fields(style, pairs)) output.out(line);
  const indent = ' '.repeat(Math.max(...pairs.map(([key]) => key.length)) + 2);
  for (const type of report.events) output.out(`${indent}${type}`);
  return 0;
}
