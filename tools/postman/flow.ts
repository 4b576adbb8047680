/**
 * The order in which the Postman collection runs against a sandbox (freshly seeded, or with any
 * amount of earlier history), and what each request checks and remembers. Steps are keyed by the spec's route (`METHOD /v1/...`): a step
 * whose route is not in the OpenAPI document yet (the sandbox endpoints, before they land) is
 * left out, and an operation the plan does not know is appended at the end with the generic
 * checks, so the collection follows the API as it grows.
 *
 * Scripts are Postman sandbox JavaScript. In test scripts `body` is the parsed JSON response.
 */
import { EVENTS_MAX_LIMIT } from '@lop/domain';

export interface FlowStep {
  route: string;
  folder: string;
  /** Request name; defaults to the operation summary. */
  name?: string;
  /** A second request for the same operation (e.g. the idempotent replay) gets its own key. */
  key?: string;
  /** JavaScript expression giving the expected status codes. */
  expect: string;
  /** Query parameters: a value (may use {{variables}}), or null to leave the parameter disabled. */
  query?: Record<string, string | null>;
  /** Raw body text instead of the example with its fields bound to variables. */
  rawBody?: string;
  prerequest?: string[];
  test?: string[];
}

/** Collection variables the flow fills in as it goes (path parameters bind to these too). */
export const FLOW_VARIABLES: Record<string, string> = {
  program_id: '',
  item_id: '',
  region: '',
  collection: '',
  external_subject_id: 'postman-subject-0001',
  external_order_id: '',
  order_body: '',
  order_template: '',
  order_id: '',
  scenario: '',
  order_progressed: 'false',
  result_id: '',
  report_retrieval_path: '',
  events_cursor: '',
};

const newUuid = "const uuid = require('uuid');";

/** Page size of the flow's stream reads: the largest the API allows, so a long history takes few requests. */
const EVENTS_PAGE = EVENTS_MAX_LIMIT;

/** Sets a variable where the run reads it: an environment value, when the environment has one, shadows a collection variable. */
const setVariable = (name: string, value: string) =>
  `pm.collectionVariables.set('${name}', ${value}); if (pm.environment.has('${name}')) pm.environment.set('${name}', ${value});`;

const skipUnless = (variable: string, why: string) => [
  `if (!pm.variables.get('${variable}')) { console.log('skipped: ${why}'); pm.execution.skipRequest(); }`,
];

export const FLOW: FlowStep[] = [
  {
    route: 'GET /v1/health',
    folder: '1. Access',
    expect: '[200]',
    test: ["pm.test('the key is a sandbox key', () => pm.expect(body.data.environment).to.equal('sandbox'));"],
  },
  { route: 'GET /v1/lab', folder: '2. Discover', expect: '[200]', test: ["pm.test('certifications are not_modeled', () => pm.expect(body.data.certifications.state).to.equal('not_modeled'));"] },
  { route: 'GET /v1/locations', folder: '2. Discover', expect: '[200]' },
  {
    route: 'GET /v1/programs',
    folder: '2. Discover',
    expect: '[200]',
    test: [
      "const active = body.data.filter((p) => p.status === 'active');",
      "pm.test('at least one active program is granted', () => pm.expect(active.length).to.be.above(0));",
      "pm.collectionVariables.set('program_id', active[0].program_id);",
    ],
  },
  { route: 'GET /v1/programs/{programId}', folder: '2. Discover', expect: '[200]', test: ["pm.test('it is the program asked for', () => pm.expect(body.data.program_id).to.equal(pm.variables.get('program_id')));"] },
  {
    route: 'GET /v1/programs/{programId}/catalog',
    folder: '2. Discover',
    expect: '[200]',
    test: ["pm.test('the catalog lists tests', () => pm.expect(body.data.length).to.be.above(0));", "pm.collectionVariables.set('item_id', body.data[0].item_id);"],
  },
  {
    route: 'GET /v1/programs/{programId}/requirements',
    folder: '2. Discover',
    expect: '[200]',
    query: { item_id: '{{item_id}}', region: null },
    test: [
      'const profile = body.data;',
      "pm.collectionVariables.set('region', profile.collection.regions[0] || '');",
      "pm.collectionVariables.set('collection', profile.collection.methods[0] || 'in_person_draw');",
      "const minimal = ['external_order_id', 'program_id', 'item_id', 'external_subject_id', 'collection'];",
      "pm.test('a minimal order satisfies this profile (otherwise use a sandbox fixture)', () => {",
      '  pm.expect(profile.order.required_fields.filter((f) => !minimal.includes(f))).to.eql([]);',
      "  pm.expect(profile.provider.requirement).to.equal('not_required');",
      '  pm.expect(profile.subject.required_patient_fields).to.eql([]);',
      '});',
    ],
  },
  {
    route: 'GET /v1/sandbox/order-fixtures',
    folder: '3. Sandbox',
    expect: '[200]',
    test: [
      "pm.test('fixtures are listed', () => pm.expect(body.data).to.be.an('array').that.is.not.empty);",
      "const isMinimal = (f) => Object.values(f).some((v) => v === 'minimal');",
      'const fixture = body.data.find(isMinimal) || body.data[0];',
      "const template = ['request', 'body', 'template', 'order'].map((k) => fixture[k]).find((v) => v && typeof v === 'object') || fixture;",
      "pm.collectionVariables.set('order_template', JSON.stringify(template));",
      "['program_id', 'item_id', 'region', 'collection', 'external_subject_id'].forEach((k) => { if (template[k]) pm.collectionVariables.set(k, template[k]); });",
    ],
  },
  {
    route: 'GET /v1/sandbox/scenarios',
    folder: '3. Sandbox',
    expect: '[200]',
    test: [
      'const names = body.data.map((s) => s.scenario);',
      "pm.test('scenarios are listed', () => pm.expect(names).to.be.an('array').that.is.not.empty);",
      "const preferred = ['report_available', 'happy_path'].find((n) => names.includes(n)) || names[0];",
      "pm.collectionVariables.set('scenario', preferred);",
    ],
  },
  {
    route: 'POST /v1/serviceability',
    folder: '4. Prepare',
    expect: '[200]',
    test: ["pm.test('the test is serviceable', () => pm.expect(body.data.serviceable, JSON.stringify(body.data.reasons)).to.equal(true));"],
  },
  { route: 'PUT /v1/subjects/{externalSubjectId}', folder: '4. Prepare', expect: '[200]', rawBody: '{}', test: ["pm.test('the subject is linked', () => pm.expect(body.data.linked).to.equal(true));"] },
  {
    // A sandbox has history: the stream may hold any number of earlier events. Like a partner,
    // keep the stream's end as a cursor before ordering, then read only what came after it.
    route: 'GET /v1/events',
    key: 'stream-end',
    name: 'Take a cursor at the end of the event stream (before ordering)',
    folder: '4. Prepare',
    expect: '[200]',
    query: { cursor: '{{events_cursor}}', limit: String(EVENTS_PAGE) },
    prerequest: ["if (!pm.variables.get('events_cursor')) pm.request.removeQueryParams('cursor');"],
    test: [
      "pm.test('next_cursor is always returned', () => pm.expect(body.data.next_cursor).to.be.a('string'));",
      "pm.collectionVariables.set('events_cursor', body.data.next_cursor);",
      '// Not at the end yet: read the next page with this same request.',
      'if (body.data.has_more) pm.execution.setNextRequest(pm.info.requestId);',
    ],
  },
  {
    route: 'POST /v1/orders',
    folder: '5. Order',
    expect: '[201]',
    rawBody: '{{order_body}}',
    prerequest: [
      newUuid,
      '// A fresh Idempotency-Key for every new order; the replay below reuses it.',
      setVariable('idempotency_key', 'uuid.v4()'),
      "const template = pm.variables.get('order_template');",
      'const order = template',
      '  ? JSON.parse(template)',
      "  : { program_id: pm.variables.get('program_id'), item_id: pm.variables.get('item_id'), collection: pm.variables.get('collection') };",
      "order.external_order_id = 'postman-' + uuid.v4();",
      "order.external_subject_id = pm.variables.get('external_subject_id');",
      "if (!template && pm.variables.get('region')) order.region = pm.variables.get('region');",
      "pm.collectionVariables.set('external_order_id', order.external_order_id);",
      "pm.collectionVariables.set('order_body', JSON.stringify(order));",
    ],
    test: [
      "pm.collectionVariables.set('order_id', body.data.order_id);",
      "pm.collectionVariables.set('order_progressed', 'false');",
      "pm.test('the order is the one sent', () => pm.expect(body.data.external_order_id).to.equal(pm.variables.get('external_order_id')));",
      "pm.test('a first request is not a replay', () => pm.expect(pm.response.headers.get('Idempotent-Replayed')).to.be.undefined);",
    ],
  },
  {
    route: 'POST /v1/orders',
    key: 'replay',
    name: 'Replay the same order (same Idempotency-Key and body)',
    folder: '5. Order',
    expect: '[201]',
    rawBody: '{{order_body}}',
    test: [
      "pm.test('the original order comes back', () => pm.expect(body.data.order_id).to.equal(pm.variables.get('order_id')));",
      "pm.test('marked Idempotent-Replayed: true', () => pm.expect(pm.response.headers.get('Idempotent-Replayed')).to.equal('true'));",
    ],
  },
  { route: 'GET /v1/orders/{orderId}', folder: '5. Order', expect: '[200]', test: ["pm.test('it is our order', () => pm.expect(body.data.order_id).to.equal(pm.variables.get('order_id')));"] },
  { route: 'GET /v1/orders/{orderId}/exceptions', folder: '5. Order', expect: '[200]', test: ["pm.test('exceptions are counted', () => pm.expect(body.data.count).to.be.a('number'));"] },
  {
    route: 'POST /v1/sandbox/orders/{orderId}/simulate',
    folder: '6. Simulate',
    expect: '[200]',
    prerequest: skipUnless('scenario', 'no sandbox scenario is listed'),
    test: [
      "pm.test('the scenario emitted events', () => pm.expect(body.data.events_emitted).to.be.above(0));",
      "pm.collectionVariables.set('order_progressed', 'true');",
    ],
  },
  {
    route: 'GET /v1/orders/{orderId}/results',
    folder: '7. Results',
    expect: '[200]',
    test: [
      "pm.test('released versions only; pending otherwise', () => pm.expect(body.data.pending).to.be.a('boolean'));",
      "pm.collectionVariables.set('result_id', body.data.current_result_id || '');",
    ],
  },
  { route: 'GET /v1/orders/{orderId}/results/{resultId}', folder: '7. Results', expect: '[200]', prerequest: skipUnless('result_id', 'no released result yet') },
  {
    route: 'GET /v1/orders/{orderId}/results/{resultId}/fhir',
    folder: '7. Results',
    expect: '[200]',
    prerequest: skipUnless('result_id', 'no released result yet'),
    test: [
      "pm.test('a FHIR R4 Bundle: the DiagnosticReport first, then its Observations', () => { pm.expect(body.resourceType).to.equal('Bundle'); pm.expect(body.entry[0].resource.resourceType).to.equal('DiagnosticReport'); });",
      "pm.test('no LOINC, no Patient resource', () => { pm.expect(pm.response.text()).to.not.match(/loinc/i); pm.expect(body.entry.map((e) => e.resource.resourceType)).to.not.include('Patient'); });",
    ],
  },
  {
    route: 'GET /v1/orders/{orderId}/results/{resultId}/report',
    folder: '7. Results',
    expect: '[200, 404]',
    prerequest: skipUnless('result_id', 'no released result yet'),
    test: [
      "if (pm.response.code === 404) pm.test('no document: report_not_modeled, never a fabricated report', () => pm.expect(body.error.code).to.equal('report_not_modeled'));",
      "pm.collectionVariables.set('report_retrieval_path', pm.response.code === 200 ? body.data.report.retrieval_path : '');",
    ],
  },
  {
    route: 'GET /v1/orders/{orderId}/results/{resultId}/report/document',
    folder: '7. Results',
    expect: '[200]',
    prerequest: [
      ...skipUnless('report_retrieval_path', 'no report document is available'),
      "pm.request.url = pm.variables.replaceIn('{{base_url}}') + pm.variables.get('report_retrieval_path');",
    ],
  },
  {
    route: 'GET /v1/events',
    name: 'Read the event stream from the cursor taken before ordering',
    folder: '8. Reconcile',
    expect: '[200]',
    query: { cursor: '{{events_cursor}}', limit: String(EVENTS_PAGE) },
    test: [
      "const created = body.data.events.some((e) => e.type === 'order.created' && e.data.order_id === pm.variables.get('order_id'));",
      "pm.test('sequence increases', () => body.data.events.forEach((e, i, all) => i === 0 || pm.expect(e.sequence).to.be.above(all[i - 1].sequence)));",
      "pm.collectionVariables.set('events_cursor', body.data.next_cursor);",
      '// Other activity of the same API client may come first on a busy sandbox: follow next_cursor until our event.',
      'if (!created && body.data.has_more) pm.execution.setNextRequest(pm.info.requestId);',
      "else pm.test('the stream holds order.created for our order after the cursor', () => pm.expect(created).to.equal(true));",
    ],
  },
  {
    route: 'POST /v1/orders/{orderId}/cancel',
    folder: '9. Cancel',
    // After a sandbox scenario the order is too far along: 409, order unchanged.
    expect: "pm.variables.get('order_progressed') === 'true' ? [409] : [200]",
    test: [
      "if (pm.response.code === 200) pm.test('the order is cancelled', () => pm.expect(body.data.lifecycle).to.equal('cancelled'));",
      "if (pm.response.code === 409) pm.test('refused: the order progressed too far', () => pm.expect(body.error.code).to.equal('conflict'));",
    ],
  },
  {
    route: 'GET /v1/events',
    key: 'after-cursor',
    name: 'Read the event stream from the saved cursor',
    folder: '9. Cancel',
    expect: '[200]',
    query: { cursor: '{{events_cursor}}', limit: String(EVENTS_PAGE) },
    test: [
      "const types = body.data.events.filter((e) => e.data.order_id === pm.variables.get('order_id')).map((e) => e.type);",
      "if (pm.variables.get('order_progressed') !== 'true') pm.test('only what happened since the cursor: order.cancelled', () => pm.expect(types).to.include('order.cancelled'));",
      "pm.test('next_cursor is always returned', () => pm.expect(body.data.next_cursor).to.be.a('string'));",
    ],
  },
];

export const OTHER_FOLDER = '10. Other operations';

/** Test script run after every request: the status the step expects and the spec's envelope. */
export function statusTest(expect: string): string[] {
  return [
    `const expected = ${expect};`,
    "pm.test('status ' + expected.join(' or '), () => pm.expect(pm.response.code).to.be.oneOf(expected));",
    'let body;',
    'try { body = pm.response.json(); } catch (e) { body = undefined; }',
  ];
}

/**
 * Collection-level test: every response is the success or the error envelope, with X-Request-Id;
 * the FHIR view's success is the FHIR resource itself (its failures keep the envelope).
 */
export const ENVELOPE_TEST = [
  "const isFhir = pm.response.code < 400 && /^application\\/fhir\\+json/.test(pm.response.headers.get('Content-Type') || '');",
  "if (isFhir) pm.test('FHIR resource with X-Request-Id', () => { pm.expect(pm.response.json().resourceType).to.be.a('string'); pm.expect(pm.response.headers.get('X-Request-Id')).to.match(/^req_/); });",
  "else pm.test('envelope: ' + (pm.response.code < 400 ? 'data and request_id' : 'error and request_id'), () => {",
  '  const body = pm.response.json();',
  "  pm.expect(body.request_id).to.be.a('string').and.match(/^req_/);",
  "  pm.expect(pm.response.headers.get('X-Request-Id')).to.equal(body.request_id);",
  "  if (pm.response.code < 400) pm.expect(body).to.have.property('data');",
  "  else { pm.expect(body.error.code).to.be.a('string'); pm.expect(body.error.message).to.be.a('string'); }",
  '});',
];

/** Collection-level pre-request: a clear failure when the environment is not filled in. */
export const SETUP_CHECK = [
  "['base_url', 'api_key'].forEach((name) => { if (!pm.variables.get(name)) throw new Error('Set ' + name + ' in the environment (see docs/getting-started.md).'); });",
];
