import { randomUUID } from 'node:crypto';
import { SCOPES } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { resultVersions } from '@lop/db';
import { beforeAll, describe, expect, it } from 'vitest';
import { demoId, FHIR_CONTENT_TYPE, FHIR_EXTENSIONS, FHIR_SYSTEMS, laboratoryCaller, observationRoles } from '@lop/domain';
import { type TestResponse } from '../testing/harness';
import { buildTenant, type Tenant, unique } from '@lop/testing';
import { expectError, expectList, expectSuccess } from '../testing/expect-envelope';
import { orderBody, type OrdersClient } from '../testing/orders';
import { fhirR4Errors } from '../testing/fhir-r4';
import { useScene } from '../testing/scene';

/**
 * The FHIR R4 view of a released result version (docs/fhir.md): valid R4 for every bundle the
 * sandbox can produce, the supplied text kept exactly, no LOINC, lineage as status and links, no
 * personal data, and the result's own authorization on both doors.
 */

const STATUS_OF_STATE: Record<string, string> = { partial: 'preliminary', final: 'final', corrected: 'corrected', amended: 'amended' };
/** A value the view writes as a valueQuantity: an optional comparator, then a JSON number without exponent (at most 18 digits). */
const PLAIN_DECIMAL_VALUE = /^(<=|>=|<|>)?(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?)$/;
/** Scenarios that release results; the others end before any release. */
const RELEASING = ['happy_path', 'partial_then_final', 'corrected_result', 'critical_result', 'specimen_rejected', 'report_available'];

type Json = Record<string, any>;

const fhirPath = (orderId: string, resultId: string) => `/v1/orders/${orderId}/results/${resultId}/fhir`;
const entriesOf = (bundle: Json, type: string): Json[] => bundle.entry.filter((e: Json) => e.resource.resourceType === type).map((e: Json) => e.resource);
const reportOf = (bundle: Json): Json => entriesOf(bundle, 'DiagnosticReport')[0];
const extensionOf = (resource: Json, url: string): Json | undefined => resource.extension?.find((e: Json) => e.url === url);
const suppliedFieldsOf = (observation: Json): Record<string, unknown> =>
  Object.fromEntries(
    (observation.extension ?? [])
      .filter((e: Json) => e.url === FHIR_EXTENSIONS.suppliedField)
      .map((e: Json) => {
        const value = e.extension.find((x: Json) => x.url === 'value');
        return [e.extension.find((x: Json) => x.url === 'name').valueString, value.valueString ?? value.valueBoolean];
      }),
  );

/** A FHIR answer: the media type, the request id, valid R4, and nothing the rules forbid anywhere in it. */
function expectBundle(response: TestResponse): Json {
  expect(response.status, response.text).toBe(200);
  expect(response.headers.get('content-type')).toBe(FHIR_CONTENT_TYPE);
  expect(response.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]+$/);
  const bundle = response.body;
  expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'collection' });
  expect(bundle.data, 'the resource itself, not the envelope').toBeUndefined();
  expect(fhirR4Errors(bundle)).toEqual([]);
  expect(response.text).not.toMatch(/loinc/i);
  expect(entriesOf(bundle, 'Patient')).toEqual([]);
  expect(bundle.entry[0].resource.resourceType).toBe('DiagnosticReport');
  return bundle;
}

/** The bundle says what the partner's own result record and lineage say, field by field. */
function expectTrueTo(bundle: Json, record: Json, lineage: Json, externalSubjectId: string) {
  const report = reportOf(bundle);
  expect(report.status).toBe(STATUS_OF_STATE[record.state]);
  expect(report.issued).toBe(record.released_at);
  expect(report.identifier).toEqual(
    expect.arrayContaining([
      { use: 'official', system: FHIR_SYSTEMS.resultId, value: record.result_id },
      { use: 'secondary', system: FHIR_SYSTEMS.resultVersion(record.order_id), value: String(record.version) },
    ]),
  );
  expect(report.basedOn).toEqual([{ type: 'ServiceRequest', identifier: { system: FHIR_SYSTEMS.orderId, value: record.order_id } }]);
  expect(report.subject).toEqual({ type: 'Patient', identifier: { system: FHIR_SYSTEMS.externalSubjectId, value: externalSubjectId } });
  expect(extensionOf(report, FHIR_EXTENSIONS.critical)?.valueBoolean).toBe(record.is_critical);
  expect(extensionOf(report, FHIR_EXTENSIONS.replaces)?.valueReference.identifier.value).toBe(record.supersedes_result_id ?? undefined);
  expect(extensionOf(report, FHIR_EXTENSIONS.supersededBy)?.valueReference.identifier.value).toBe(lineage.superseded_by_result_id ?? undefined);

  const observations = entriesOf(bundle, 'Observation');
  expect(observations).toHaveLength(record.observations.length);
  expect(report.result.map((r: Json) => r.reference)).toEqual(bundle.entry.filter((e: Json) => e.resource.resourceType === 'Observation').map((e: Json) => e.fullUrl));
  record.observations.forEach((supplied: Json, i: number) => {
    const observation = observations[i];
    const roles = observationRoles(supplied);
    const at = (role: keyof typeof roles) => (roles[role] === undefined ? undefined : supplied[roles[role]]);
    // A correction marks only what it changed; the rest stays final.
    expect(['corrected', 'amended'].includes(report.status) ? [report.status, 'final'] : [report.status]).toContain(observation.status);
    expect(observation.subject).toEqual(report.subject);
    const decimal = typeof at('value') === 'string' ? PLAIN_DECIMAL_VALUE.exec(at('value') as string) : null;
    if (decimal && decimal[2].replace(/[^0-9]/g, '').length <= 18) {
      expect(observation.valueString).toBeUndefined();
      expect(observation.valueQuantity.value).toBe(Number(decimal[2]));
      expect(observation.valueQuantity.comparator).toBe(decimal[1]);
      expect(observation.valueQuantity.unit).toBe(at('unit'));
    } else if (typeof at('value') === 'string') expect(observation.valueString).toBe(at('value'));
    expect(observation.identifier).toEqual([{ system: `urn:lop:order:${record.order_id}:observation`, value: expect.any(String) }]);
    if (roles.name) expect(observation.code.text).toBe(at('name'));
    if (roles.code) expect(observation.code.coding).toEqual([{ system: expect.stringMatching(/^urn:lop:laboratory:[0-9a-f-]+:observation-code$/), code: at('code') }]);
    if (roles.referenceInterval) expect(observation.referenceRange).toEqual([{ text: at('referenceInterval') }]);
    if (roles.flag) expect(observation.interpretation[0].text).toBe(at('flag'));
    else expect(observation.interpretation).toBeUndefined();
    if (roles.comment) expect(observation.note).toEqual([{ text: at('comment') }]);
    const kept = suppliedFieldsOf(observation);
    const mapped = new Set<string>(Object.values(roles));
    for (const [name, value] of Object.entries(supplied)) {
      if (mapped.has(name) || name === 'loinc' || value === null || value === '') continue;
      expect(kept[name], `observation ${i} keeps ${name}`).toBe(typeof value === 'object' ? JSON.stringify(value) : value);
    }
  });
}

describe('GET /v1/orders/{orderId}/results/{resultId}/fhir', () => {
  // A fresh client of the demo laboratory, every sandbox program granted: the sandbox's own catalog.
  const scene = useScene({ observed: true, rateLimit: false, partner: 'demo', client: true });
  const { api, client: demo, connection, fixtures: f } = scene;
  const lab = laboratoryCaller({ db: connection.db });
  let fixtureBodies: Record<string, Json>;
  // A tenant of its own for results the laboratory records by hand.
  let tenant: Tenant;
  let own: OrdersClient;
  let subject: string;

  beforeAll(async () => {
    const listed = expectList(await api.call('GET', '/v1/sandbox/order-fixtures', { key: demo.key }));
    fixtureBodies = Object.fromEntries(listed.filter((x) => x.available).map((x) => [x.contract, x.body]));
    ({ tenant, client: own, subject } = await scene.freshPartner());
  });

  /** A sandbox order run through a scenario; its released versions with their lineage entries. */
  async function simulated(body: Json, scenario: string) {
    const created = await demo.create({ ...body, external_order_id: unique('fhir') });
    const orderId = expectSuccess(created, 201).order_id;
    expectSuccess(await api.call('POST', `/v1/sandbox/orders/${orderId}/simulate`, { key: demo.key, json: { scenario } }));
    const collection = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results`, { key: demo.key }));
    return { orderId, collection, subject: body.external_subject_id as string };
  }

  async function readAll(client: OrdersClient, orderId: string, externalSubjectId: string) {
    const collection = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results`, { key: client.key }));
    const bundles: Json[] = [];
    for (const [i, record] of collection.results.entries()) {
      const response = await api.call('GET', fhirPath(orderId, record.result_id), { key: client.key });
      const bundle = expectBundle(response);
      expectTrueTo(bundle, record, collection.version_lineage[i], externalSubjectId);
      // A quantity's digits are the supplied ones in the bytes: 1.50 stays 1.50.
      for (const supplied of record.observations) {
        const decimal = typeof supplied.value === 'string' ? PLAIN_DECIMAL_VALUE.exec(supplied.value) : null;
        if (decimal && decimal[2].replace(/[^0-9]/g, '').length <= 18) expect(response.text).toContain(`"valueQuantity":{"value":${decimal[2]}`);
      }
      bundles.push(bundle);
    }
    return { collection, bundles };
  }

  it('the validator used here finds what is wrong in a deliberately broken bundle', async () => {
    const { orderId, collection } = await simulated(fixtureBodies.minimal, 'happy_path');
    const valid = expectBundle(await api.call('GET', fhirPath(orderId, collection.current_result_id), { key: demo.key }));
    const broken = (change: (bundle: Json) => void) => {
      const copy = structuredClone(valid);
      change(copy);
      return fhirR4Errors(copy);
    };
    const first = (b: Json) => entriesOf(b, 'Observation')[0];
    expect(first(valid).valueQuantity).toBeDefined();
    expect(broken((b) => (first(b).valueQuantity.value = '1.50'))).not.toEqual([]);
    expect(broken((b) => (first(b).valueQuantity.comparator = '~'))).not.toEqual([]);
    expect(
      broken((b) => {
        delete first(b).valueQuantity;
        first(b).valueString = 1.5;
      }),
    ).not.toEqual([]);
    expect(broken((b) => delete entriesOf(b, 'Observation')[0].code)).not.toEqual([]);
    expect(broken((b) => (entriesOf(b, 'Observation')[0].referenceRange = [{ low: { value: '1.50' } }]))).not.toEqual([]);
    expect(broken((b) => (reportOf(b).status = 'released'))).not.toEqual([]);
    expect(broken((b) => (b.type = 'bag'))).not.toEqual([]);
    expect(broken((b) => (reportOf(b).issued = 'yesterday'))).not.toEqual([]);
    expect(broken((b) => (reportOf(b).identifier[0].use = 'primary'))).not.toEqual([]);
    expect(broken((b) => (reportOf(b).surprise = true))).not.toEqual([]);
    expect(broken((b) => (entriesOf(b, 'Observation')[0].interpretation = [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation', code: 'HIGH' }] }]))).not.toEqual([]);
    expect(broken((b) => (entriesOf(b, 'Observation')[0].note = [{ text: '' }]))).not.toEqual([]);
    expect(broken((b) => reportOf(b).extension.push({ url: FHIR_EXTENSIONS.replaces, valueString: 'an id' }))).not.toEqual([]);
    expect(broken((b) => reportOf(b).extension.push({ url: 'http://hl7.org/fhir/StructureDefinition/diagnosticReport-supersededBy', valueBoolean: true }))).not.toEqual([]);
    expect(broken((b) => (entriesOf(b, 'Observation')[0].code = { extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueString: 'unknown' }] }))).not.toEqual([]);
  });

  // Every scenario for every panel: many orders simulated one after another, so its time follows the machine's load (CI once took over 30 s).
  it('every bundle the sandbox scenarios produce, for every synthetic panel, is valid R4 and true to the result record', { timeout: 180_000 }, async () => {
    const scenarios = expectList(await api.call('GET', '/v1/sandbox/scenarios', { key: demo.key })).map((s) => s.scenario as string);
    expect(scenarios).toEqual(expect.arrayContaining(RELEASING));
    // Each synthetic panel (synthetic-results.ts) through a wellness item, and every fixture contract as offered.
    const wellness = demoId('program:wellness-sbx');
    const bodies: Record<string, Json> = { ...fixtureBodies };
    // The personal facets the fixtures carry, so each item's requirements profile is met.
    const facets = { patient: fixtureBodies.patient.patient, ordering_provider: fixtureBodies.provider.ordering_provider, region: fixtureBodies.patient.region };
    for (const code of ['CBC', 'LIPID', 'HBA1C', 'VITD']) bodies[code] = { ...fixtureBodies.minimal, ...facets, program_id: wellness, item_id: demoId(`item:wellness-sbx:${code}`) };
    const covered = new Set<string>();
    let versions = 0;
    for (const [name, body] of Object.entries(bodies)) {
      for (const scenario of scenarios) {
        const { orderId, collection } = await simulated(body, scenario);
        if (!RELEASING.includes(scenario)) {
          expect(collection.results, `${scenario} releases nothing`).toEqual([]);
          continue;
        }
        const { bundles } = await readAll(demo, orderId, body.external_subject_id);
        expect(bundles.length).toBeGreaterThan(0);
        versions += bundles.length;
        covered.add(reportOf(bundles[0]).code.text);
        expect(reportOf(bundles[0]).code.coding[0].system, name).toMatch(/^urn:lop:laboratory:[0-9a-f-]+:test-code$/);
      }
    }
    // CBC, Lipid, A1c, a default panel (Vitamin D), and TSH through the ask-at-order-entry fixture.
    expect([...covered]).toEqual(expect.arrayContaining(['Complete Blood Count with Differential', 'Lipid Panel', 'Hemoglobin A1c', 'Vitamin D, 25-Hydroxy', 'Thyroid Stimulating Hormone']));
    expect(versions).toBeGreaterThanOrEqual(Object.keys(bodies).length * 8);
  });

  it('a final result: status final, the version in identifier, nothing replaced or superseded, the specimen referenced', async () => {
    const { orderId } = await simulated(fixtureBodies.minimal, 'happy_path');
    const { bundles } = await readAll(demo, orderId, fixtureBodies.minimal.external_subject_id);
    expect(bundles).toHaveLength(1);
    const report = reportOf(bundles[0]);
    expect(report.status).toBe('final');
    expect(report.extension.map((e: Json) => e.url)).toEqual([FHIR_EXTENSIONS.critical]);
    const [specimen] = entriesOf(bundles[0], 'Specimen');
    expect(specimen).toMatchObject({ resourceType: 'Specimen', subject: report.subject, collection: { collectedDateTime: expect.any(String) } });
    const specimenUrl = bundles[0].entry.at(-1).fullUrl;
    expect(report.specimen).toEqual([{ reference: specimenUrl }]);
    for (const observation of entriesOf(bundles[0], 'Observation')) expect(observation.specimen).toEqual({ reference: specimenUrl });
    // Stable: the same version reads the same, apart from nothing.
    const again = expectBundle(await api.call('GET', fhirPath(orderId, report.identifier[0].value), { key: demo.key }));
    expect(again).toEqual(bundles[0]);
  });

  it('partial then final: v1 preliminary and superseded by v2; v2 final and replaces v1', async () => {
    const { orderId } = await simulated(fixtureBodies.minimal, 'partial_then_final');
    const { collection, bundles } = await readAll(demo, orderId, fixtureBodies.minimal.external_subject_id);
    const [v1, v2] = collection.results;
    expect([reportOf(bundles[0]).status, reportOf(bundles[1]).status]).toEqual(['preliminary', 'final']);
    expect(extensionOf(reportOf(bundles[0]), FHIR_EXTENSIONS.supersededBy)?.valueReference).toEqual({ type: 'DiagnosticReport', identifier: { system: FHIR_SYSTEMS.resultId, value: v2.result_id } });
    expect(extensionOf(reportOf(bundles[1]), FHIR_EXTENSIONS.replaces)?.valueReference).toEqual({ type: 'DiagnosticReport', identifier: { system: FHIR_SYSTEMS.resultId, value: v1.result_id } });
    expect(extensionOf(reportOf(bundles[1]), FHIR_EXTENSIONS.supersededBy)).toBeUndefined();
    expect(entriesOf(bundles[0], 'Observation').length).toBeLessThan(entriesOf(bundles[1], 'Observation').length);
  });

  it('a corrected result: v2 corrected as a whole, only the changed observation corrected, its value and comment as supplied', async () => {
    const { orderId } = await simulated(fixtureBodies.minimal, 'corrected_result');
    const { collection, bundles } = await readAll(demo, orderId, fixtureBodies.minimal.external_subject_id);
    expect(reportOf(bundles[1]).status).toBe('corrected');
    const changed = collection.results[1].observations.findIndex((o: Json) => o.result_status === 'corrected');
    expect(changed).toBeGreaterThanOrEqual(0);
    // R4: corrected is an Observation modified to correct an error (HL7 v2: OBX-11 = C on that OBX only).
    expect(entriesOf(bundles[1], 'Observation').map((o) => o.status)).toEqual(collection.results[1].observations.map((_: Json, i: number) => (i === changed ? 'corrected' : 'final')));
    const observation = entriesOf(bundles[1], 'Observation')[changed];
    expect(observation.note[0].text).toMatch(/^Corrected result; previously reported as /);
    expect(suppliedFieldsOf(observation).result_status).toBe('corrected');
  });

  it('a critical result: the critical extension, and HH/LL kept as the laboratory flag and as R4 interpretation', async () => {
    const { orderId } = await simulated(fixtureBodies.minimal, 'critical_result');
    const { collection, bundles } = await readAll(demo, orderId, fixtureBodies.minimal.external_subject_id);
    const report = reportOf(bundles[0]);
    expect(extensionOf(report, FHIR_EXTENSIONS.critical)?.valueBoolean).toBe(true);
    const i = collection.results[0].observations.findIndex((o: Json) => /^(HH|LL)$/.test(o.abnormal_flag ?? ''));
    const flag = collection.results[0].observations[i].abnormal_flag;
    expect(entriesOf(bundles[0], 'Observation')[i].interpretation).toEqual([
      {
        coding: [
          { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation', code: flag, display: flag === 'HH' ? 'Critical high' : 'Critical low' },
          { system: expect.stringMatching(/^urn:lop:laboratory:[0-9a-f-]+:flag$/), code: flag },
        ],
        text: flag,
      },
    ]);
  });

  it('values, units, intervals and flags exactly as supplied: plain decimals as quantities with their own digits, comparators, non-ASCII, odd fields', async () => {
    const orderId = expectSuccess(await own.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201).order_id;
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    const observations: Record<string, string | boolean | null | Record<string, string>>[] = [
      { code: 'K', analyte: 'Potassium', value: '1.50', unit: 'mmol/L', reference_interval: '3.50-5.10', abnormal_flag: 'L' },
      { code: 'CRP', analyte: 'C-reactive protein', value: '<0.5', unit: 'mg/L', reference_interval: '<5.0' },
      { code: 'TSH', analyte: 'TSH', value: '>100.000', unit: 'µIU/mL', reference_interval: '0.450–4.500', abnormal_flag: 'H*', comment: 'Vérifié deux fois — résultat confirmé.' },
      { code: 'GLU', analyte: 'Glucose à jeun', value: '092', unit: 'mg/dL', reference_interval: '≥ 70 et ≤ 99', abnormal_flag: 'N' },
      { code: 'HIV 1/2', analyte: '抗体 スクリーニング', value: 'Négatif', unit: '', reference_interval: 'Négatif', abnormal_flag: 'négatif' },
      { code: 'BIG', analyte: 'Large count', value: '12345678901234567890', unit: '/L', result_status: 'final', instrument: { name: 'Analyzer 7', lane: 'B' }, repeated: true, absent: null },
      { code: 'with  two spaces', analyte: 'Code that is not a FHIR code', value: '  7.0 ' },
      { analyte: 'Pending analyte', value: null, comment: 'Not performed: insufficient quantity.' },
      { code: 'BOOL', value: true },
      { unit: 'only a unit' },
      // The other names laboratories use (README's example sends name and flag).
      { code: 'WBC', name: 'White blood cells', result: '6.10', units: '10^3/uL', reference_range: '3.4-10.8', flag: 'N', comments: 'Smear reviewed.' },
      { analyte: 'First name wins', name: 'Kept as supplied', value: '1', abnormal_flag: '', flag: 'A' },
      // A UCUM code only when the laboratory supplies one.
      { code: 'NA', analyte: 'Sodium', value: '139.0', unit: 'mmol/L', ucum_code: 'mmol/L' },
      { code: 'BE', analyte: 'Base excess', value: '-2.50', unit: 'mmol/L' },
      { code: 'EXP', analyte: 'An exponent', value: '1e3', unit: 'U/L' },
    ];
    const recorded = await lab.recordResult({ order_id: orderId, source_result_id: 'LIS-Ünïcode-1', performing_laboratory_system: 'Système LIS 8', observations });
    await lab.releaseResult({ result_id: recorded.result.result_id, as: 'final' });
    const response = await api.call('GET', fhirPath(orderId, recorded.result.result_id), { key: own.key });
    const bundle = expectBundle(response);
    const { collection } = await readAll(own, orderId, subject);
    expect(collection.results[0].observations.map((o: Json) => o.value)).toEqual(observations.map((o) => o.value));
    // In the JSON text itself, character for character.
    for (const value of ['092', 'Négatif', '12345678901234567890', '  7.0 ', '1e3']) expect(response.text).toContain(`"valueString":${JSON.stringify(value)}`);
    // A plain decimal is a valueQuantity whose JSON number is written with the supplied digits.
    for (const quantity of ['{"value":1.50,"unit":"mmol/L"}', '{"value":0.5,"comparator":"<","unit":"mg/L"}', '{"value":100.000,"comparator":">","unit":"µIU/mL"}', '{"value":6.10,"unit":"10^3/uL"}', '{"value":1}', '{"value":139.0,"unit":"mmol/L","system":"http://unitsofmeasure.org","code":"mmol/L"}', '{"value":-2.50,"unit":"mmol/L"}'])
      expect(response.text).toContain(`"valueQuantity":${quantity}`);
    expect(response.text).not.toContain('"valueString":"1.50"');
    const obs = entriesOf(bundle, 'Observation');
    expect(obs[0].interpretation[0].coding[0]).toEqual({ system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation', code: 'L', display: 'Low' });
    expect(suppliedFieldsOf(obs[0])).toEqual({});
    expect(obs[0].valueString).toBeUndefined();
    expect(obs[2].valueQuantity).toEqual({ value: 100, comparator: '>', unit: 'µIU/mL' });
    // Not a quantity: the unit stays a supplied field.
    expect(suppliedFieldsOf(obs[3])).toEqual({ unit: 'mg/dL' });
    // A flag without an R4 equivalent keeps only the laboratory's own coding and text.
    expect(obs[2].interpretation).toEqual([{ coding: [{ system: expect.stringMatching(/:flag$/), code: 'H*' }], text: 'H*' }]);
    expect(obs[4].interpretation).toEqual([{ coding: [{ system: expect.stringMatching(/:flag$/), code: 'négatif' }], text: 'négatif' }]);
    expect(obs[4].code.coding[0].code).toBe('HIV 1/2');
    expect(suppliedFieldsOf(obs[4])).toEqual({});
    // A nested object is its JSON text as the result record returns it (stored as jsonb, whose key order is PostgreSQL's).
    const stored = collection.results[0].observations[5];
    expect(stored.instrument).toEqual(observations[5].instrument);
    expect(suppliedFieldsOf(obs[5])).toEqual({ unit: '/L', result_status: 'final', instrument: JSON.stringify(stored.instrument), repeated: true });
    // Not a valid FHIR code: kept as a supplied field, the name still in code.text.
    expect(obs[6].code).toEqual({ text: 'Code that is not a FHIR code' });
    expect(suppliedFieldsOf(obs[6]).code).toBe('with  two spaces');
    expect(obs[7].valueString).toBeUndefined();
    expect(obs[7].dataAbsentReason.coding[0].code).toBe('unknown');
    expect(obs[8].valueBoolean).toBe(true);
    expect(obs[9].code).toEqual({ extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' }] });
    expect(obs[10]).toMatchObject({
      code: { coding: [{ code: 'WBC' }], text: 'White blood cells' },
      valueQuantity: { value: 6.1, unit: '10^3/uL' },
      referenceRange: [{ text: '3.4-10.8' }],
      interpretation: [{ coding: [{ code: 'N', display: 'Normal' }, { code: 'N' }], text: 'N' }],
      note: [{ text: 'Smear reviewed.' }],
    });
    expect(suppliedFieldsOf(obs[10])).toEqual({});
    // An empty abnormal_flag cannot be carried (FHIR has no empty string): the next name for a flag is.
    expect(obs[11]).toMatchObject({ code: { text: 'First name wins' }, valueQuantity: { value: 1 }, interpretation: [{ text: 'A' }] });
    expect(suppliedFieldsOf(obs[12])).toEqual({});
    expect(obs[14]).toMatchObject({ valueString: '1e3' });
    expect(suppliedFieldsOf(obs[14])).toEqual({ unit: 'U/L' });
    expect(suppliedFieldsOf(obs[11])).toEqual({ name: 'Kept as supplied' });
    expect(reportOf(bundle).identifier[2]).toEqual({ use: 'secondary', system: expect.stringMatching(/:source-result-id$/), value: 'LIS-Ünïcode-1', assigner: { display: 'Système LIS 8' } });

    // An amendment of it: status amended, replacing the final.
    const amended = await lab.recordResult({ order_id: orderId, source_result_id: 'LIS-Ünïcode-2', performing_laboratory_system: 'Système LIS 8', observations: [{ ...observations[0], value: '1.60' }] });
    await lab.releaseResult({ result_id: amended.result.result_id, as: 'amended' });
    const after = await readAll(own, orderId, subject);
    expect(after.bundles.map((b) => reportOf(b).status)).toEqual(['final', 'amended']);
    expect(entriesOf(after.bundles[1], 'Observation')[0]).toMatchObject({ status: 'amended', valueQuantity: { value: 1.6, unit: 'mmol/L' } });
  });

  /** An order of the own tenant, in testing: ready for results the laboratory records by hand. */
  async function ownOrderInTesting(): Promise<string> {
    const orderId = expectSuccess(await own.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201).order_id;
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    return orderId;
  }

  async function release(orderId: string, as: 'partial' | 'final' | 'corrected' | 'amended', observations: Record<string, string>[]) {
    const recorded = await lab.recordResult({ order_id: orderId, source_result_id: unique('LIS'), performing_laboratory_system: 'LIS', observations });
    await lab.releaseResult({ result_id: recorded.result.result_id, as });
  }

  it('a correction marks only what it changed since the last final version; a value put back is a change too', async () => {
    const orderId = await ownOrderInTesting();
    const na = (value: string) => ({ code: 'NA', analyte: 'Sodium', value, unit: 'mmol/L' });
    const k = (value: string) => ({ code: 'K', analyte: 'Potassium', value, unit: 'mmol/L' });
    await release(orderId, 'partial', [k('4.0')]);
    await release(orderId, 'final', [k('4.1'), na('140')]);
    await release(orderId, 'corrected', [k('4.1'), na('141')]);
    await release(orderId, 'amended', [k('4.1'), na('140'), { code: 'CL', analyte: 'Chloride', value: '101' }]);
    const { bundles } = await readAll(own, orderId, subject);
    const statuses = bundles.map((b) => [reportOf(b).status, ...entriesOf(b, 'Observation').map((o) => `${o.identifier[0].value}:${o.status}`)]);
    expect(statuses).toEqual([
      ['preliminary', 'K:preliminary'],
      ['final', 'K:final', 'NA:final'],
      // Potassium changed since the partial version, not since the final one: not a correction.
      ['corrected', 'K:final', 'NA:corrected'],
      // Sodium back to the final's 140 is still a change to what v3 said; chloride is new.
      ['amended', 'K:final', 'NA:amended', 'CL:amended'],
    ]);
  });

  it('identifiers stable across versions: loading the versions into a FHIR store by conditional update leaves one current value per analyte', async () => {
    const { orderId } = await simulated(fixtureBodies.minimal, 'corrected_result');
    const { collection, bundles } = await readAll(demo, orderId, fixtureBodies.minimal.external_subject_id);
    expect(bundles).toHaveLength(2);
    const identifiersOf = (bundle: Json, type: string) => entriesOf(bundle, type).map((r) => JSON.stringify(r.identifier.find((i: Json) => i.system !== FHIR_SYSTEMS.resultId && i.use !== 'secondary')));
    expect(identifiersOf(bundles[1], 'Observation')).toEqual(identifiersOf(bundles[0], 'Observation'));
    expect(identifiersOf(bundles[1], 'DiagnosticReport')).toEqual(identifiersOf(bundles[0], 'DiagnosticReport'));
    expect(new Set(identifiersOf(bundles[1], 'Observation')).size).toBe(entriesOf(bundles[1], 'Observation').length);
    expect(reportOf(bundles[1]).identifier).toContainEqual({ use: 'usual', system: 'urn:lop:order-report', value: orderId });

    // A FHIR store's conditional update (PUT [type]?identifier=system|value): replace the one
    // resource with that identifier, or create it; several matches are an error (412).
    const store: Json[] = [];
    const conditionalUpdate = (resource: Json) => {
      const key = resource.resourceType === 'DiagnosticReport' ? resource.identifier.find((i: Json) => i.system === 'urn:lop:order-report') : resource.identifier?.[0];
      if (!key) throw new Error(`${resource.resourceType} has no identifier to update by`);
      const matches = store.filter((r) => r.resourceType === resource.resourceType && r.identifier?.some((i: Json) => i.system === key.system && i.value === key.value));
      if (matches.length > 1) throw new Error('412: several matches');
      if (matches.length === 1) store.splice(store.indexOf(matches[0]), 1, resource);
      else store.push(resource);
    };
    const load = (bundle: Json) => bundle.entry.filter((e: Json) => e.resource.resourceType !== 'Specimen').forEach((e: Json) => conditionalUpdate(e.resource));
    const current = () =>
      store
        .filter((r) => r.resourceType === 'Observation')
        .map((o) => [o.code.coding[0].code, o.valueQuantity?.value ?? o.valueString, o.status])
        .sort();
    load(bundles[0]);
    load(bundles[1]);
    const afterCorrection = current();
    // The same bundle loaded again duplicates nothing.
    load(bundles[1]);
    expect(current()).toEqual(afterCorrection);
    const corrected = collection.results[1].observations;
    expect(afterCorrection).toHaveLength(corrected.length);
    expect(store.filter((r) => r.resourceType === 'DiagnosticReport').map((r) => r.status)).toEqual(['corrected']);
    const changed = corrected.find((o: Json) => o.result_status === 'corrected');
    const before = collection.results[0].observations.find((o: Json) => o.code === changed.code);
    expect(before.value).not.toBe(changed.value);
    expect(afterCorrection.filter(([code]) => code === changed.code)).toEqual([[changed.code, Number(changed.value), 'corrected']]);
  });

  describe('FHIR content negotiation: _format, _pretty and Accept', () => {
    let orderId: string;
    let resultId: string;
    let compact: string;

    beforeAll(async () => {
      orderId = await ownOrderInTesting();
      await release(orderId, 'final', [{ code: 'K', analyte: 'Potassium', value: '4.10', unit: 'mmol/L' }]);
      resultId = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results`, { key: own.key })).current_result_id;
      compact = (await api.call('GET', fhirPath(orderId, resultId), { key: own.key })).text;
    });

    it('FHIR’s own _format (json, application/json, application/fhir+json) and _pretty are accepted', async () => {
      for (const query of ['_format=json', '_format=application/json', '_format=application%2Ffhir%2Bjson', '_format=application/fhir+json', '_pretty=false', '_format=json&_pretty=false']) {
        const response = await api.call('GET', `${fhirPath(orderId, resultId)}?${query}`, { key: own.key });
        expectBundle(response);
        expect(response.text, query).toBe(compact);
      }
      const pretty = await api.call('GET', `${fhirPath(orderId, resultId)}?_pretty=true`, { key: own.key });
      expectBundle(pretty);
      expect(pretty.text).toContain('\n  "resourceType": "Bundle"');
      expect(pretty.text).toContain('"value": 4.10,');
      expect(pretty.body).toEqual(JSON.parse(compact));
      expectError(await api.call('GET', `${fhirPath(orderId, resultId)}?_pretty=yes`, { key: own.key }), 400, 'invalid_request');
      expectError(await api.call('GET', `${fhirPath(orderId, resultId)}?_count=10`, { key: own.key }), 400, 'invalid_request');
    });

    it('an Accept that allows FHIR JSON is answered; one that allows only XML (or _format=xml) is 406 not_acceptable in the envelope', async () => {
      for (const accept of ['application/fhir+json', 'application/json', '*/*', 'application/fhir+xml, application/fhir+json;q=0.5', 'application/fhir+json; fhirVersion=4.0']) {
        expectBundle(await api.call('GET', fhirPath(orderId, resultId), { key: own.key, headers: { accept } }));
      }
      for (const accept of ['application/fhir+xml', 'application/xml', 'text/html', 'application/fhir+json;q=0', 'application/fhir+json; fhirVersion=3.0']) {
        const response = await api.call('GET', fhirPath(orderId, resultId), { key: own.key, headers: { accept } });
        expectError(response, 406, 'not_acceptable');
        expect(response.headers.get('content-type'), accept).toMatch(/^application\/json/);
      }
      for (const format of ['xml', 'application/fhir+xml', 'ttl', 'html']) {
        expectError(await api.call('GET', `${fhirPath(orderId, resultId)}?_format=${encodeURIComponent(format)}`, { key: own.key }), 406, 'not_acceptable');
      }
      // _format overrides Accept, as FHIR says.
      expectBundle(await api.call('GET', `${fhirPath(orderId, resultId)}?_format=json`, { key: own.key, headers: { accept: 'application/fhir+xml' } }));
      // Authorization still comes first.
      expectError(await api.call('GET', fhirPath(orderId, resultId), { headers: { accept: 'application/fhir+xml' } }), 401, 'unauthorized');
    });
  });

  it('laboratory text that is not valid R4 is refused at record-result, and nothing is recorded', async () => {
    const orderId = await ownOrderInTesting();
    const refused: [string, Record<string, unknown>][] = [
      ['vertical tab', { analyte: 'K', value: '4.1\u000b' }],
      ['form feed', { analyte: 'K', comment: 'page\u000cbreak' }],
      ['another C0 control', { analyte: 'K\u001b[31m', value: '4.1' }],
      ['a control character deep inside', { analyte: 'K', instrument: { name: 'A\u0007' } }],
      ['a control character in a key', { analyte: 'K', ['unit\u0001']: 'mmol/L' }],
      ['a whitespace-only value', { analyte: 'K', value: ' \t ' }],
      ['a whitespace-only key', { analyte: 'K', '  ': 'x' }],
      ['a string over 1 MB', { analyte: 'K', comment: 'x'.repeat(1024 * 1024 + 1) }],
    ];
    for (const [label, observation] of refused) {
      await expect(lab.recordResult({ order_id: orderId, source_result_id: 'R-bad', performing_laboratory_system: 'LIS', observations: [observation as never] }), label).rejects.toThrow(/observations/);
    }
    expect(await connection.db.select().from(resultVersions).where(eq(resultVersions.orderId, orderId))).toEqual([]);
    // Tab and line breaks are text; an empty string is no value.
    await release(orderId, 'final', [{ analyte: 'K', value: '4.1', comment: 'line one\nline two\ttabbed\r\n', unit: '' }]);
    await readAll(own, orderId, subject);
  });

  it('holds no personal data: the subject is the opaque external_subject_id, nothing of the patient or provider', async () => {
    const body = fixtureBodies.patient;
    expect(body.patient, 'the patient fixture carries personal data').toBeTruthy();
    const { orderId } = await simulated(body, 'happy_path');
    const collection = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results`, { key: demo.key }));
    const response = await api.call('GET', fhirPath(orderId, collection.current_result_id), { key: demo.key });
    const bundle = expectBundle(response);
    expect(reportOf(bundle).subject.identifier.value).toBe(body.external_subject_id);
    const personal = [...Object.values(body.patient as Json), ...Object.values((body.ordering_provider ?? {}) as Json)].filter((v) => typeof v === 'string' && v.length > 3);
    expect(personal.length).toBeGreaterThan(3);
    for (const value of personal) expect(response.text, value).not.toContain(value);
    for (const key of ['legal_first_name', 'legal_last_name', 'date_of_birth', 'birthDate', 'address', 'telecom', 'clinical_notes', 'npi']) expect(response.text).not.toContain(key);
  });

  describe('authorization: the result’s own, on every request', () => {
    let orderId: string;
    let resultId: string;
    let unreleasedId: string;

    beforeAll(async () => {
      orderId = expectSuccess(await own.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201).order_id;
      await lab.accept({ order_id: orderId });
      await lab.collect({ order_id: orderId });
      await lab.receive({ order_id: orderId });
      await lab.accession({ order_id: orderId });
      const first = await lab.recordResult({ order_id: orderId, source_result_id: 'R-1', performing_laboratory_system: 'LIS', observations: [{ analyte: 'A1c', value: '5.4', unit: '%' }] });
      resultId = first.result.result_id;
      await lab.releaseResult({ result_id: resultId, as: 'final' });
      unreleasedId = (await lab.recordResult({ order_id: orderId, source_result_id: 'R-2', performing_laboratory_system: 'LIS', observations: [{ analyte: 'A1c', value: '5.9', unit: '%' }] })).result.result_id;
    });

    it('the own key reads it; unreleased, unknown, another order’s and malformed ids are 404 in the partner envelope', async () => {
      expectBundle(await api.call('GET', fhirPath(orderId, resultId), { key: own.key }));
      const otherOrder = expectSuccess(await own.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201).order_id;
      for (const path of [fhirPath(orderId, unreleasedId), fhirPath(orderId, randomUUID()), fhirPath(otherOrder, resultId), fhirPath(randomUUID(), resultId), fhirPath(orderId, 'not-a-uuid')]) {
        const response = await api.call('GET', path, { key: own.key });
        expectError(response, 404, 'not_found');
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        expect(response.text).not.toContain(unreleasedId);
      }
    });

    it('other clients, laboratories and environments get 404; a key without results:read 403; no key 401', async () => {
      const secondClient = await f.client(tenant.laboratory.id);
      await f.grant(secondClient.client_id, tenant.sandbox.program);
      const other = await buildTenant(f);
      const strangers = [await f.key(secondClient.client_id, 'sandbox'), await other.key(), await tenant.key({ environment: 'production' })];
      for (const key of strangers) {
        const response = await api.call('GET', fhirPath(orderId, resultId), { key });
        expectError(response, 404, 'not_found');
        for (const id of [orderId, resultId]) expect(response.text).not.toContain(id);
      }
      const noResults = await tenant.key({ scopes: SCOPES.filter((s) => s !== 'results:read') });
      expectError(await api.call('GET', fhirPath(orderId, resultId), { key: noResults }), 403, 'forbidden');
      expectError(await api.call('GET', fhirPath(orderId, resultId)), 401, 'unauthorized');
    });

    it('the console’s tRPC door answers the same bundle and the same refusals', async () => {
      const trpc = (input: unknown, key: string) => api.fetch('GET', `/api/trpc/results.fhir?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: { authorization: `Bearer ${key}` } });
      const rest = expectBundle(await api.call('GET', fhirPath(orderId, resultId), { key: own.key }));
      const answered = await trpc({ orderId, resultId }, own.key);
      expect(answered.status, answered.text).toBe(200);
      expect(answered.headers.get('content-type'), 'tRPC’s own JSON around the Bundle').toMatch(/^application\/json/);
      expect(answered.headers.get('x-request-id')).toMatch(/^req_/);
      expect(answered.body.result.data).toEqual(rest);
      expect(fhirR4Errors(answered.body.result.data)).toEqual([]);
      const refused = async (input: unknown, key: string, status: number, code: string) => {
        const response = await trpc(input, key);
        expect(response.status, response.text).toBe(status);
        expect(response.body.error.data.partner.error.code).toBe(code);
      };
      await refused({ orderId, resultId: unreleasedId }, own.key, 404, 'not_found');
      const secondClient = await f.client(tenant.laboratory.id);
      await f.grant(secondClient.client_id, tenant.sandbox.program);
      await refused({ orderId, resultId }, await f.key(secondClient.client_id, 'sandbox'), 404, 'not_found');
      await refused({ orderId, resultId }, await tenant.key({ scopes: ['orders:read'] }), 403, 'forbidden');
      await refused({ orderId, resultId }, await tenant.key({ environment: 'production' }), 403, 'forbidden');
    });
  });
});
