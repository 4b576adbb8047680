import { EVENT_TYPES } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { orders } from '@lop/db';
import { buildTenant, unique } from '@lop/testing';
import { expectError, expectList, expectSuccess } from '../testing/expect-envelope';
import { ordersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

/** DESIGN §10: the scenarios the sandbox offers at least. */
const DESIGN_SCENARIOS = [
  'happy_path',
  'partial_then_final',
  'corrected_result',
  'critical_result',
  'specimen_rejected',
  'cancelled_by_laboratory',
  'transmission_failure',
  'report_available',
];

interface ListedScenario {
  scenario: string;
  steps: number;
  events: string[];
  step_names: string[];
  step_details: { step: number; name: string; operation: string; requires_lifecycle_detail: string; events: string[] }[];
  ends_in: string;
}

describe('sandbox scenarios and POST /v1/sandbox/orders/{orderId}/simulate', () => {
  // A brand-new client of the demo laboratory: its stream holds only what this file does.
  const scene = useScene({ rateLimit: false, partner: 'demo', client: true, subject: false });
  const { api, client, connection, fixtures: f } = scene;
  let orderTemplate: Record<string, unknown>;
  let scenarios: Map<string, ListedScenario>;

  beforeAll(async () => {
    const listed = expectList(await api.call('GET', '/v1/sandbox/order-fixtures', { key: client.key }));
    orderTemplate = listed.find((fixture) => fixture.contract === 'minimal').body;
    scenarios = new Map(expectList(await api.call('GET', '/v1/sandbox/scenarios', { key: client.key })).map((s: ListedScenario) => [s.scenario, s]));
  });

  const placeOrder = async (ordersOf = client): Promise<string> =>
    expectSuccess(await ordersOf.create({ ...orderTemplate, external_order_id: unique('sim') }), 201).order_id;
  const simulate = (orderId: string, body: Record<string, unknown>, key = client.key) => api.call('POST', `/v1/sandbox/orders/${orderId}/simulate`, { key, json: body });

  /** The stream's position now: follow next_cursor to the end. */
  const streamEnd = async (): Promise<string> => {
    let cursor: string | undefined;
    for (;;) {
      const page = expectSuccess(await client.events(cursor ? `?cursor=${cursor}&limit=500` : '?limit=500'));
      cursor = page.next_cursor;
      if (!page.has_more) return cursor!;
    }
  };
  /** Every event after `cursor`, in stream order. */
  const eventsAfter = async (cursor: string): Promise<{ type: string; sequence: number; data: { order_id: string } }[]> => {
    const all = [];
    for (;;) {
      const page = expectSuccess(await client.events(`?cursor=${cursor}&limit=500`));
      all.push(...page.events);
      cursor = page.next_cursor;
      if (!page.has_more) return all;
    }
  };

  describe('GET /v1/sandbox/scenarios', () => {
    it('lists exactly the scenarios of DESIGN §10', () => {
      expect([...scenarios.keys()].sort()).toEqual([...DESIGN_SCENARIOS].sort());
    });

    it('each scenario has its step count, step names and events, the events being those of its steps in order', () => {
      for (const s of scenarios.values()) {
        expect(Number.isInteger(s.steps) && s.steps > 0).toBe(true);
        expect(s.step_names).toHaveLength(s.steps);
        expect(s.step_details.map((d) => d.name)).toEqual(s.step_names);
        expect(s.step_details.map((d) => d.step)).toEqual(s.step_names.map((_, i) => i + 1));
        expect(s.events).toEqual(s.step_details.flatMap((d) => d.events));
        expect(s.events.length).toBeGreaterThan(0);
        for (const type of s.events) expect(EVENT_TYPES).toContain(type);
        expect(s.step_details[0].requires_lifecycle_detail).toBe('received');
      }
    });

    it('names the outcomes DESIGN §10 asks for: an exception and a recollection, a laboratory cancellation, a transmission failure, a critical and a corrected result', () => {
      expect(scenarios.get('specimen_rejected')!.events).toEqual(expect.arrayContaining(['integration.action_required', 'specimen.updated', 'result.final']));
      expect(scenarios.get('specimen_rejected')!.step_details.map((d) => d.operation)).toEqual(expect.arrayContaining(['reject_specimen']));
      expect(scenarios.get('specimen_rejected')!.step_details.filter((d) => d.operation === 'collect')).toHaveLength(2);
      expect(scenarios.get('cancelled_by_laboratory')!.events.at(-1)).toBe('order.cancelled');
      // The failure is the laboratory's to retry: the scenario shows the recovery, and never asks the partner to act.
      expect(scenarios.get('transmission_failure')!).toMatchObject({ ends_in: 'accepted', step_names: ['transmit', 'fail_transmission', 'retransmit', 'acknowledge'] });
      expect(scenarios.get('transmission_failure')!.events).not.toContain('integration.action_required');
      expect(scenarios.get('critical_result')!.events).toContain('result.critical');
      expect(scenarios.get('corrected_result')!.events).toEqual(expect.arrayContaining(['result.final', 'result.corrected']));
      expect(scenarios.get('partial_then_final')!.events).toEqual(expect.arrayContaining(['result.partial', 'result.final']));
    });

    it('needs only a valid key: a production key and a key without scopes list them too', async () => {
      const tenant = await buildTenant(f);
      for (const key of [await tenant.key({ environment: 'production' }), await tenant.key({ scopes: ['events:read'] })]) {
        expect(expectList(await api.call('GET', '/v1/sandbox/scenarios', { key })).map((s) => s.scenario)).toEqual([...scenarios.keys()]);
      }
      expectError(await api.call('GET', '/v1/sandbox/scenarios'), 401, 'unauthorized');
    });
  });

  describe('running a scenario', () => {
    it.each(DESIGN_SCENARIOS)('%s on a fresh order appends exactly its listed events to the stream, in order, and events_emitted counts them', async (name) => {
      const listed = scenarios.get(name)!;
      const orderId = await placeOrder();
      const cursor = await streamEnd();

      const result = expectSuccess(await simulate(orderId, { scenario: name }));
      const appended = await eventsAfter(cursor);

      expect(appended.map((e) => e.type)).toEqual(listed.events);
      expect(appended.every((e) => e.data.order_id === orderId)).toBe(true);
      expect(result).toMatchObject({ order_id: orderId, scenario: name, events_emitted: appended.length, event_types: listed.events });
      expect(result).toMatchObject({ steps_applied: listed.steps, steps_completed: listed.steps, steps_remaining: 0, lifecycle_detail: listed.ends_in });
      expect(expectSuccess(await client.get(orderId)).lifecycle_detail).toBe(listed.ends_in);
    });

    it.each(DESIGN_SCENARIOS)('%s step by step (steps: 1 repeatedly) emits the same events as the whole scenario, one step at a time', async (name) => {
      const listed = scenarios.get(name)!;
      const orderId = await placeOrder();
      const cursor = await streamEnd();

      for (let i = 0; i < listed.steps; i++) {
        const result = expectSuccess(await simulate(orderId, { scenario: name, steps: 1 }));
        expect(result).toMatchObject({ steps_applied: 1, steps_completed: i + 1, steps_remaining: listed.steps - i - 1 });
        expect(result.applied_steps).toEqual([{ step: i + 1, name: listed.step_names[i], events: listed.step_details[i].events }]);
        expect(result.events_emitted).toBe(listed.step_details[i].events.length);
        const next = listed.step_details[i + 1];
        if (next) expect(result.lifecycle_detail).toBe(next.requires_lifecycle_detail);
      }
      expect((await eventsAfter(cursor)).map((e) => e.type)).toEqual(listed.events);
    });

    it('steps larger than what remains runs the rest of the scenario', async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'happy_path', steps: 2 }));
      const rest = expectSuccess(await simulate(orderId, { scenario: 'happy_path', steps: 1000 }));
      const total = scenarios.get('happy_path')!.steps;
      expect(rest).toMatchObject({ steps_applied: total - 2, steps_completed: total, steps_remaining: 0, lifecycle: 'completed' });
    });
  });

  describe('what the scenarios leave for the partner to read', () => {
    it('happy_path: a released final CBC with observations as a laboratory sends them (values, units, reference intervals, flags)', async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'happy_path' }));
      const results = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results`, { key: client.key }));
      expect(results).toMatchObject({ pending: false, current_version: 1 });
      const [result] = results.results;
      expect(result).toMatchObject({ state: 'final', status: 'released', is_critical: false, performing_laboratory_system: 'Sandbox laboratory simulator' });
      expect(result.observations.map((o: { code: string }) => o.code)).toEqual(['WBC', 'RBC', 'HGB', 'HCT', 'PLT']);
      expect(result.observations[0]).toMatchObject({ analyte: 'White Blood Cell Count', value: '6.4', unit: 'x10^3/uL', reference_interval: '3.4-10.8', abnormal_flag: null, loinc: 'not_modeled' });
      // Text, as every value at the laboratory boundary: the sandbox sends what a laboratory system prints.
      expect(result.observations[4].value).toBe('251');
      for (const observation of result.observations) for (const value of Object.values(observation)) expect(typeof value).not.toBe('number');
      expectError(await api.call('GET', `/v1/orders/${orderId}/results/${result.result_id}/report`, { key: client.key }), 404, 'report_not_modeled');
    });

    it('critical_result: the released version is critical and the critical observation is flagged', async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'critical_result' }));
      const [result] = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results`, { key: client.key })).results;
      expect(result.is_critical).toBe(true);
      expect(result.observations.find((o: { code: string }) => o.code === 'HGB')).toMatchObject({ value: '6.1', abnormal_flag: 'LL' });
    });

    it('corrected_result: the correction supersedes the final version, which stays retrievable', async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'corrected_result' }));
      const results = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results`, { key: client.key }));
      expect(results.version_lineage.map((v: { state: string; is_current: boolean }) => [v.state, v.is_current])).toEqual([
        ['final', false],
        ['corrected', true],
      ]);
      const corrected = results.results.find((r: { state: string }) => r.state === 'corrected');
      expect(corrected.observations.find((o: { code: string }) => o.code === 'HGB')).toMatchObject({ value: '12.6', abnormal_flag: 'L', result_status: 'corrected' });
    });

    it('specimen_rejected: the exception opened by the rejection is resolved by the recollection, and the new specimen records which one it replaces', async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'specimen_rejected' }));
      const order = expectSuccess(await client.get(orderId));
      expect(order.specimens.map((s: { status: string }) => s.status)).toEqual(['rejected', 'accessioned']);
      expect(order.specimens[1].recollection_of).toBe(order.specimens[0].specimen_id);
      const exceptions = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/exceptions`, { key: client.key }));
      expect(exceptions).toMatchObject({ count: 1, action_required: false, exceptions: [{ category: 'specimen_rejected', status: 'resolved' }] });
    });

    it('transmission_failure, two steps: the order waits, pending, with a laboratory-owned retryable exception; the rest retransmits and resolves it', async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'transmission_failure', steps: 2 }));
      expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle: 'pending', lifecycle_detail: 'transmission_failed', next_action: 'wait_for_laboratory', transmission: { status: 'failed' } });
      const exceptionsPath = `/v1/orders/${orderId}/exceptions`;
      expect(expectSuccess(await api.call('GET', exceptionsPath, { key: client.key }))).toMatchObject({
        action_required: false,
        exceptions: [{ category: 'transmission_failed', status: 'open', owner_role: 'laboratory', retryable: true }],
      });
      expectSuccess(await simulate(orderId, { scenario: 'transmission_failure' }));
      expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'accepted', transmission: { status: 'sent', ack_status: 'accepted', attempt_no: 2 } });
      expect(expectSuccess(await api.call('GET', exceptionsPath, { key: client.key }))).toMatchObject({ action_required: false, exceptions: [{ status: 'resolved' }] });
    });

    it('report_available: the released result has a synthetic PDF report behind a short-lived retrieval path', async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'report_available' }));
      const { current_result_id: resultId } = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results`, { key: client.key }));
      const report = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results/${resultId}/report`, { key: client.key }));
      expect(report.report).toMatchObject({ available: true, state: 'available' });
      const document = expectSuccess(await api.call('GET', report.report.retrieval_path, { key: client.key }));
      expect(document.content_type).toBe('application/pdf');
      const pdf = Buffer.from(document.content_base64, 'base64').toString('latin1');
      expect(pdf.startsWith('%PDF-1.4')).toBe(true);
      expect(pdf.trimEnd().endsWith('%%EOF')).toBe(true);
      expect(pdf).toContain('SYNTHETIC SANDBOX REPORT');
    });
  });

  describe('refusals', () => {
    it('a second run of a completed scenario is 422 simulation_not_allowed and adds nothing to the stream', async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'happy_path' }));
      const cursor = await streamEnd();
      const error = expectError(await simulate(orderId, { scenario: 'happy_path' }), 422, 'simulation_not_allowed');
      expect(error.details).toEqual([expect.objectContaining({ issue: 'scenario_completed' })]);
      expect(error.message).toMatch(/already run all \d+ steps/);
      expect(await eventsAfter(cursor)).toEqual([]);
    });

    it("a scenario whose first step does not fit the order's state (another scenario completed it) is 422 with a clear message", async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'happy_path' }));
      const error = expectError(await simulate(orderId, { scenario: 'partial_then_final' }), 422, 'simulation_not_allowed');
      expect(error.details).toEqual([expect.objectContaining({ issue: 'scenario_not_applicable' })]);
      expect(error.message).toBe(
        'The scenario partial_then_final starts from a newly created order (lifecycle_detail received); this order is final_results. Create a new sandbox order to run it.',
      );
    });

    it('a scenario cannot continue once the order left the state its next step needs (cancelled by the partner mid-way): 422, nothing changes', async () => {
      const orderId = await placeOrder();
      expectSuccess(await simulate(orderId, { scenario: 'happy_path', steps: 2 }));
      expectSuccess(await client.cancel(orderId));
      const cursor = await streamEnd();
      const error = expectError(await simulate(orderId, { scenario: 'happy_path', steps: 1 }), 422, 'simulation_not_allowed');
      expect(error.message).toMatch(/step 3 of \d+, await_collection\) needs an order in state accepted; this order is cancelled_by_partner/);
      expect(await eventsAfter(cursor)).toEqual([]);
    });

    it('a production key is 422 simulation_not_allowed', async () => {
      const tenant = await buildTenant(f);
      const production = ordersClient(api, await tenant.key({ environment: 'production' }));
      const subject = await production.subject();
      const orderId = expectSuccess(
        await production.create({ external_order_id: unique('prod'), program_id: tenant.production.program.id, item_id: tenant.production.item.id, external_subject_id: subject, collection: 'in_person_draw' }),
        201,
      ).order_id;
      const error = expectError(await simulate(orderId, { scenario: 'happy_path' }, production.key), 422, 'simulation_not_allowed');
      expect(error.details).toEqual([expect.objectContaining({ issue: 'production_key' })]);
      expect(expectSuccess(await production.get(orderId)).lifecycle_detail).toBe('received');
    });

    it('a non-synthetic order is 422 simulation_not_allowed', async () => {
      const orderId = await placeOrder();
      await connection.db.update(orders).set({ synthetic: false }).where(eq(orders.id, orderId));
      const error = expectError(await simulate(orderId, { scenario: 'happy_path' }), 422, 'simulation_not_allowed');
      expect(error.details).toEqual([expect.objectContaining({ issue: 'order_not_synthetic' })]);
    });

    it("another client's order, an unknown order and a malformed id are 404", async () => {
      const orderId = await placeOrder();
      const other = await buildTenant(f);
      expectError(await simulate(orderId, { scenario: 'happy_path' }, await other.key()), 404, 'not_found');
      expectError(await simulate('7d0c3a52-3c7e-4b7a-9a55-0d6f3f2b8e11', { scenario: 'happy_path' }), 404, 'not_found');
      expectError(await simulate('not-a-uuid', { scenario: 'happy_path' }), 404, 'not_found');
      expect(expectSuccess(await client.get(orderId)).lifecycle_detail).toBe('received');
    });

    it('needs orders:write (403); an unknown scenario, a missing scenario or steps below 1 is 400', async () => {
      const orderId = await placeOrder();
      const tenantKeyWithoutWrite = await f.key((await buildTenant(f)).clientId, 'sandbox', { scopes: ['orders:read'] });
      expectError(await simulate(orderId, { scenario: 'happy_path' }, tenantKeyWithoutWrite), 403, 'forbidden');
      for (const body of [{ scenario: 'no_such_scenario' }, {}, { scenario: 'happy_path', steps: 0 }, { scenario: 'happy_path', steps: 1.5 }, { scenario: 'happy_path', extra: true }]) {
        expectError(await simulate(orderId, body), 400, 'invalid_request');
      }
      expect(expectSuccess(await client.get(orderId)).lifecycle_detail).toBe('received');
    });

    it('a missing scenario is issue required (as for any missing field); a wrong one is invalid_value', async () => {
      const orderId = await placeOrder();
      expect(expectError(await simulate(orderId, {}), 400, 'invalid_request').details).toEqual([expect.objectContaining({ field: 'scenario', issue: 'required' })]);
      expect(expectError(await simulate(orderId, { scenario: 'nope' }), 400, 'invalid_request').details).toEqual([expect.objectContaining({ field: 'scenario', issue: 'invalid_value' })]);
    });
  });
});
