import { describe, expect, it } from 'vitest';
import { laboratoryCaller } from '@lop/domain';
import { expectError, expectSuccess, ts, uuid } from '../testing/expect-envelope';
import { orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/** The spec's Result version record fields, plus observations, released_at, is_critical and supersedes_result_id. */
const RESULT_FIELDS = [
  'result_id',
  'order_id',
  'accession_id',
  'panel_item_id',
  'accession_number',
  'version',
  'version_type',
  'state',
  'status',
  'performing_laboratory',
  'performing_laboratory_system',
  'source_result_id',
  'supersedes_result_id',
  'is_critical',
  'released_at',
  'observations',
].sort();
const LINEAGE_FIELDS = ['result_id', 'version', 'version_type', 'state', 'released_at', 'supersedes_result_id', 'superseded_by_result_id', 'is_current'].sort();
const COLLECTION_FIELDS = ['order_id', 'pending', 'pending_reason', 'current_result_id', 'current_version', 'version_lineage', 'results'].sort();

/** Observations as a laboratory sends them: values are text, and text that looks like a number must stay exactly that text. */
const OBSERVATIONS: Record<string, any>[] = [
  { analyte: 'Glucose', value: '098', unit: 'mg/dL', reference_interval: '70-99', flag: null },
  { analyte: 'LDL Cholesterol', value: '<10', unit: 'mg/dL', reference_interval: '0-99', flag: 'L' },
  { analyte: 'Potassium', value: '4.10', unit: 'mmol/L', reference_interval: { low: '3.5', high: '5.1' } },
  { analyte: 'Culture', value: 'No growth at 48 hours', comments: ['Final', 'Reviewed'] },
];

describe('results: released versions only, with an append-only lineage', () => {
  const scene = useScene({ observed: true, client: true });
  const { api, tenant, client, connection } = scene;
  const lab = laboratoryCaller({ db: connection.db });

  const placeOrder = async (): Promise<string> => expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject)), 201).order_id;
  const getOrder = async (orderId: string) => expectSuccess(await client.get(orderId));
  const getResults = async (orderId: string) => {
    const data = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results`, { key: client.key }));
    expect(Object.keys(data).sort()).toEqual(COLLECTION_FIELDS);
    for (const entry of data.version_lineage) expect(Object.keys(entry).sort()).toEqual(LINEAGE_FIELDS);
    for (const result of data.results) expect(Object.keys(result).sort()).toEqual(RESULT_FIELDS);
    return data;
  };
  const getResult = (orderId: string, resultId: string) => api.call('GET', `/v1/orders/${orderId}/results/${resultId}`, { key: client.key });
  const record = async (orderId: string, overrides: Record<string, unknown> = {}) =>
    (
      await lab.recordResult({
        order_id: orderId,
        source_result_id: `LIS-${Math.random().toString(36).slice(2, 10)}`,
        performing_laboratory_system: 'Sunquest LIS 8',
        observations: OBSERVATIONS,
        ...overrides,
      })
    ).result.result_id;

  it('walks an order through the laboratory: the Order resource and the results at each step', async () => {
    const orderId = await placeOrder();
    expect(await getResults(orderId)).toEqual({ order_id: orderId, pending: true, pending_reason: 'not_yet_released', current_result_id: null, current_version: null, version_lineage: [], results: [] });

    await lab.transmit({ order_id: orderId });
    let order = await getOrder(orderId);
    expect(order).toMatchObject({ lifecycle: 'pending', lifecycle_detail: 'transmitted', next_action: 'wait_for_laboratory', transmission: { status: 'sent', ack_status: 'pending', attempt_no: 1 } });
    expect(ts.safeParse(order.transmission.sent_at).success).toBe(true);

    await lab.acknowledge({ order_id: orderId, status: 'accepted', external_order_ref: 'LIS-ORD-1', requisition_id: 'REQ-0001', laboratory_reference: 'LAB-0001' });
    order = await getOrder(orderId);
    expect(order).toMatchObject({
      lifecycle: 'active',
      lifecycle_detail: 'accepted',
      next_action: 'collect_specimen',
      transmission: { ack_status: 'accepted', external_order_ref: 'LIS-ORD-1' },
      requisition: { state: 'issued', requisition_id: 'REQ-0001', laboratory_reference: 'LAB-0001', document: { state: 'not_modeled' } },
    });

    await lab.accept({ order_id: orderId });
    expect(await getOrder(orderId)).toMatchObject({ lifecycle_detail: 'awaiting_collection', requisition: { requisition_id: 'REQ-0001' } });

    const collected = await lab.collect({ order_id: orderId, specimen_code: 'TUBE-77' });
    order = await getOrder(orderId);
    expect(order).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'specimen_collected', next_action: 'wait_for_results' });
    expect(order.specimens).toEqual([
      {
        specimen_id: collected.specimen.specimen_id,
        specimen_code: 'TUBE-77',
        specimen_type: tenant.sandbox.item.specimenType,
        status: 'collected',
        accession_number: null,
        rejection_reason: null,
        collected_at: expect.any(String),
        received_at: null,
        recollection_of: null,
      },
    ]);

    await lab.ship({ order_id: orderId });
    expect(await getOrder(orderId)).toMatchObject({ lifecycle_detail: 'in_transit', specimens: [{ status: 'in_transit' }] });
    await lab.receive({ order_id: orderId });
    order = await getOrder(orderId);
    expect(order).toMatchObject({ lifecycle_detail: 'received_by_laboratory', specimens: [{ status: 'received' }] });
    expect(order.accession.received_at).toBe(order.specimens[0].received_at);
    await lab.accession({ order_id: orderId, accession_number: 'ACC-2025-1', source_system: 'Sunquest' });
    order = await getOrder(orderId);
    expect(order).toMatchObject({ lifecycle_detail: 'in_testing', accession: { accession_number: 'ACC-2025-1', source_system: 'Sunquest' }, specimens: [{ status: 'accessioned', accession_number: 'ACC-2025-1' }] });

    // Recorded, not released: pending, and the version does not exist for the partner.
    const v1 = await record(orderId);
    expect(await getResults(orderId)).toMatchObject({ pending: true, pending_reason: 'not_yet_released', current_result_id: null, version_lineage: [], results: [] });
    expectError(await getResult(orderId, v1), 404, 'not_found');

    await lab.releaseResult({ result_id: v1, as: 'partial' });
    expect(await getOrder(orderId)).toMatchObject({ lifecycle: 'resulted', lifecycle_detail: 'partial_results', next_action: 'read_results' });
    let results = await getResults(orderId);
    expect(results).toMatchObject({ pending: false, pending_reason: null, current_result_id: v1, current_version: 1 });
    expect(results.version_lineage).toEqual([
      { result_id: v1, version: 1, version_type: 'initial', state: 'partial', released_at: expect.any(String), supersedes_result_id: null, superseded_by_result_id: null, is_current: true },
    ]);
    const partial = expectSuccess(await getResult(orderId, v1));
    expect(results.results).toEqual([partial]);
    expect(partial).toMatchObject({
      result_id: v1,
      order_id: orderId,
      panel_item_id: tenant.sandbox.item.id,
      accession_number: 'ACC-2025-1',
      version: 1,
      version_type: 'initial',
      state: 'partial',
      status: 'released',
      performing_laboratory: tenant.sandbox.item.performingLaboratory,
      performing_laboratory_system: 'Sunquest LIS 8',
      is_critical: false,
      supersedes_result_id: null,
    });
    expect(uuid.safeParse(partial.accession_id).success).toBe(true);

    // A newer version recorded: pending again, the released one stays current.
    const v2 = await record(orderId);
    expect(await getResults(orderId)).toMatchObject({ pending: true, pending_reason: 'update_not_yet_released', current_result_id: v1, current_version: 1 });
    expectError(await getResult(orderId, v2), 404, 'not_found');

    await lab.releaseResult({ result_id: v2, as: 'final' });
    expect(await getOrder(orderId)).toMatchObject({ lifecycle: 'completed', lifecycle_detail: 'final_results', next_action: 'read_results' });
    results = await getResults(orderId);
    expect(results).toMatchObject({ pending: false, current_result_id: v2, current_version: 2 });
    expect(results.version_lineage.map((e: any) => [e.result_id, e.version, e.version_type, e.state, e.supersedes_result_id, e.superseded_by_result_id, e.is_current])).toEqual([
      [v1, 1, 'initial', 'partial', null, v2, false],
      [v2, 2, 'update', 'final', v1, null, true],
    ]);
    // The partial stays retrievable after the final, unchanged.
    expect(expectSuccess(await getResult(orderId, v1))).toEqual(partial);

    const v3 = await record(orderId, { observations: [{ analyte: 'Glucose', value: '101', unit: 'mg/dL', reference_interval: '70-99', flag: 'H' }] });
    await lab.releaseResult({ result_id: v3, as: 'corrected' });
    expect(await getOrder(orderId)).toMatchObject({ lifecycle: 'completed', lifecycle_detail: 'corrected_results' });
    const v4 = await record(orderId, { observations: [{ analyte: 'Glucose', value: '101', unit: 'mg/dL', comment: 'Amended: specimen source annotated' }] });
    await lab.releaseResult({ result_id: v4, as: 'amended' });
    expect(await getOrder(orderId)).toMatchObject({ lifecycle_detail: 'corrected_results' });

    results = await getResults(orderId);
    expect(results).toMatchObject({ pending: false, pending_reason: null, current_result_id: v4, current_version: 4 });
    expect(results.version_lineage.map((e: any) => [e.result_id, e.version, e.version_type, e.state, e.supersedes_result_id, e.superseded_by_result_id, e.is_current])).toEqual([
      [v1, 1, 'initial', 'partial', null, v2, false],
      [v2, 2, 'update', 'final', v1, v3, false],
      [v3, 3, 'correction', 'corrected', v2, v4, false],
      [v4, 4, 'amendment', 'amended', v3, null, true],
    ]);
    expect(results.results.map((r: any) => r.result_id)).toEqual([v1, v2, v3, v4]);
    // Superseded versions stay retrievable, each exactly as it was released.
    for (const [i, id] of [v1, v2, v3, v4].entries()) expect(expectSuccess(await getResult(orderId, id))).toEqual(results.results[i]);
    const released = results.version_lineage.map((e: any) => Date.parse(e.released_at));
    expect([...released].sort((a, b) => a - b)).toEqual(released);
  });

  it('observations come back exactly as supplied, each with loinc "not_modeled" and nothing derived', async () => {
    const orderId = await placeOrder();
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    const id = await record(orderId);
    await lab.releaseResult({ result_id: id, as: 'final' });
    const result = expectSuccess(await getResult(orderId, id));
    expect(result.observations).toEqual(OBSERVATIONS.map((o) => ({ ...o, loinc: 'not_modeled' })));
    expect(result.observations[0].value).toBe('098');
    expect(result.observations[2].value).toBe('4.10');
  });

  it('values, units, reference intervals and flags reach the partner character for character, on both doors, in every version of a lineage', async () => {
    const orderId = await placeOrder();
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    // Each version carries text a JSON number could not keep: trailing and leading zeros, more digits than a double holds.
    const versions: { as: 'partial' | 'final' | 'corrected'; observations: Record<string, string>[] }[] = [
      { as: 'partial', observations: [{ code: 'K', value: '1.50', unit: 'mmol/L', reference_interval: '3.5 - 5.1', flag: 'LL' }] },
      { as: 'final', observations: [{ code: 'K', value: '1.50', unit: 'mmol/L', reference_interval: '3.5 - 5.1', flag: 'LL' }, { code: 'CNT', value: '12345678901234567890', unit: 'copies/mL', reference_interval: '<20', flag: 'H' }] },
      { as: 'corrected', observations: [{ code: 'K', value: '4.10', unit: 'mmol/L', reference_interval: '3.5 - 5.1', flag: '' }, { code: 'CREA', value: '0070', unit: 'µmol/L', reference_interval: '45–90', flag: 'N' }] },
    ];
    const ids: string[] = [];
    for (const version of versions) {
      const id = await record(orderId, { observations: version.observations });
      await lab.releaseResult({ result_id: id, as: version.as });
      ids.push(id);
    }
    const trpc = (procedure: string, input: unknown) => api.fetch('GET', `/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: { authorization: `Bearer ${client.key}` } });
    // The bytes on the wire hold the laboratory's text: a re-serialised number would read 1.5 / 12345678901234567000.
    const expectExact = (text: string, observations: Record<string, string>[]) => {
      for (const o of observations) for (const [key, value] of Object.entries(o)) expect(text, `${key} ${value}`).toContain(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
      expect(text).not.toMatch(/"value":-?\d/);
    };
    const collection = await api.call('GET', `/v1/orders/${orderId}/results`, { key: client.key });
    const collectionOverTrpc = await trpc('results.list', { orderId });
    expect(collectionOverTrpc.status, collectionOverTrpc.text).toBe(200);
    expect(collectionOverTrpc.body.result.data.data).toEqual(expectSuccess(collection));
    for (const [i, version] of versions.entries()) {
      const rest = await getResult(orderId, ids[i]);
      const overTrpc = await trpc('results.get', { orderId, resultId: ids[i] });
      expect(overTrpc.status, overTrpc.text).toBe(200);
      for (const response of [rest, overTrpc]) expectExact(response.text, version.observations);
      expect(expectSuccess(rest).observations).toEqual(version.observations.map((o) => ({ ...o, loinc: 'not_modeled' })));
      expect(overTrpc.body.result.data.data.observations).toEqual(expectSuccess(rest).observations);
      expect(expectSuccess(collection).results[i].observations).toEqual(expectSuccess(rest).observations);
    }
    expectExact(collection.text, versions.flatMap((v) => v.observations));
    expectExact(collectionOverTrpc.text, versions.flatMap((v) => v.observations));
  });

  it('a released critical version is reported critical; one flagged later too', async () => {
    const orderId = await placeOrder();
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    const a = await record(orderId);
    await lab.releaseResult({ result_id: a, as: 'partial', critical: true });
    const b = await record(orderId);
    await lab.releaseResult({ result_id: b, as: 'final' });
    expect(expectSuccess(await getResult(orderId, a)).is_critical).toBe(true);
    expect(expectSuccess(await getResult(orderId, b)).is_critical).toBe(false);
    await lab.flagCritical({ result_id: b });
    expect(expectSuccess(await getResult(orderId, b)).is_critical).toBe(true);
  });

  it('a result is 404 through another order of the same client, and for an unknown id', async () => {
    const first = await placeOrder();
    const second = await placeOrder();
    for (const id of [first, second]) {
      await lab.accept({ order_id: id });
      await lab.collect({ order_id: id });
      await lab.receive({ order_id: id });
      await lab.accession({ order_id: id });
    }
    const resultId = await record(first);
    await lab.releaseResult({ result_id: resultId, as: 'final' });
    expectSuccess(await getResult(first, resultId));
    expectError(await getResult(second, resultId), 404, 'not_found');
    expectError(await getResult(first, '00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    expect((await getResults(second)).results).toEqual([]);
  });

  it('a cancelled order with nothing released is not pending: no result will come', async () => {
    const orderId = await placeOrder();
    await lab.cancel({ order_id: orderId });
    expect(await getResults(orderId)).toMatchObject({ pending: false, pending_reason: null, current_result_id: null, results: [] });
  });

  it('result events in the stream carry identifiers and links only: no observation values', async () => {
    const orderId = await placeOrder();
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    const id = await record(orderId);
    await lab.releaseResult({ result_id: id, as: 'final', critical: true });
    const page = expectSuccess(await api.call('GET', '/v1/events?limit=500', { key: client.key }));
    const mine = page.events.filter((e: any) => e.data.order_id === orderId);
    // receive and accession change only lifecycle_detail: their specimen.updated is the news, with no order.updated.
    expect(mine.map((e: any) => e.type)).toEqual([
      'order.created',
      'order.updated',
      'specimen.updated',
      'order.updated',
      'specimen.updated',
      'specimen.updated',
      'result.final',
      'result.critical',
      'order.updated',
    ]);
    const final = mine.find((e: any) => e.type === 'result.final');
    expect(final.data).toMatchObject({
      result_id: id,
      result_version: 1,
      result_provenance: 'laboratory_release',
      result_is_critical: true,
      links: { order: `/v1/orders/${orderId}`, results: `/v1/orders/${orderId}/results`, result: `/v1/orders/${orderId}/results/${id}` },
    });
    // Every text in the events except identifiers, instants and link paths, whose random hex and
    // digits could hold "098" by chance (a uuid does about one run in three).
    const texts: string[] = [];
    const collect = (value: unknown): void => {
      if (typeof value === 'string') texts.push(value);
      else if (value && typeof value === 'object') Object.values(value).forEach(collect);
    };
    collect(mine);
    const free = texts.filter((t) => !uuid.safeParse(t).success && !ts.safeParse(t).success && !t.startsWith('/v1/'));
    expect(free.length).toBeGreaterThan(0);
    for (const value of ['Glucose', '098', '<10', 'mg/dL', 'No growth']) expect(free.filter((t) => t.includes(value))).toEqual([]);
  });

  it('needs the results:read scope', async () => {
    const orderId = await placeOrder();
    const key = await tenant.key({ scopes: ['orders:read'] });
    expectError(await api.call('GET', `/v1/orders/${orderId}/results`, { key }), 403, 'forbidden');
    expectError(await api.call('GET', `/v1/orders/${orderId}/results/00000000-0000-4000-8000-000000000000`, { key }), 403, 'forbidden');
  });
});
