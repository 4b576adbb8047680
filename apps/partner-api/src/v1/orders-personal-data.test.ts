import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { PATIENT_FIELDS } from '@lop/domain';
import { type TestResponse } from '../testing/harness';
import { unique } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/** Every personal field, each with a value that occurs nowhere else. */
const PATIENT = {
  legal_first_name: 'Zephyrine',
  legal_last_name: 'Quillfeather',
  date_of_birth: '1931-07-19',
  sex_at_birth: 'intersex',
  phone: '+1-555-0199-4417',
  email: 'zephyrine.q4417@example.org',
  region: 'PD-Region-7731',
  address_line1: '4417 Obsidian Hollow Lane',
  address_line2: 'Apartment 77-Q',
  city: 'Vexillburg',
  postal_code: 'QX-88213',
  country: 'AQ',
};
const PROVIDER = { provider_reference: randomUUID(), name: 'Dr. Octavia Plumtree-Vasquez', npi: '9876501234' };
const AOE_ANSWERS = [
  { question_key: 'current_medication', answer: 'Levothyroxine-Zeta 88mcg nightly' },
  { question_key: 'last_dose_date', answer: '1999-12-31' },
  { question_key: 'dose_mg', answer: '4242.17' },
];
const CLINICAL_NOTES = 'Suspected Hashimoto-Xylophage syndrome; notes 8812-PD';
/** Values sent only in refused requests. */
const REFUSED = { email: 'zephyrine-not-an-email@@', nickname: 'Zephy-Secret-Nick' };

/**
 * What must never appear; a two-letter country code is searched as a JSON string. sex_at_birth is
 * one of four words of the API's own vocabulary (its enum, which a refusal's message lists and
 * the request log keeps): not a value that occurs nowhere else, so not searched.
 */
const NEEDLES = [
  ...Object.entries(PATIENT)
    .filter(([field]) => field !== 'sex_at_birth')
    .map(([field, value]) => (field === 'country' ? `"${value}"` : value)),
  ...Object.values(PROVIDER),
  ...AOE_ANSWERS.map((a) => a.answer),
  CLINICAL_NOTES,
  ...Object.values(REFUSED),
];

function expectNoPersonalData(text: string, where: string) {
  for (const needle of NEEDLES) expect(text.includes(needle), `${where} contains "${needle}"`).toBe(false);
}

describe('personal data: accepted on create, stored encrypted, never returned, logged or put in events', () => {
  const scene = useScene({ observed: true, client: true });
  const { api, tenant, client, sql, fixtures: f } = scene;
  const responses: { what: string; response: TestResponse }[] = [];
  let orderId: string;
  let request: Record<string, any>;

  const record = (what: string, response: TestResponse) => {
    responses.push({ what, response });
    return response;
  };

  beforeAll(async () => {
    // A profile that asks for every personal facet, so the values pass through every check.
    await f.requirementProfile(
      tenant.sandbox.program.id,
      {
        itemId: tenant.sandbox.item.id,
        subjectAuthorityState: 'configured',
        subjectRequiredPatientFields: [...PATIENT_FIELDS],
        providerAuthorityState: 'configured',
        providerRequirement: 'required',
        providerRequiredFields: ['provider_reference', 'name', 'npi'],
        aoeAuthorityState: 'configured',
      },
      [
        { questionKey: 'current_medication', prompt: 'Current medication?', answerType: 'string', required: true, sortOrder: 0 },
        { questionKey: 'last_dose_date', prompt: 'Last dose?', answerType: 'date', required: true, sortOrder: 1 },
        { questionKey: 'dose_mg', prompt: 'Dose in mg?', answerType: 'number', required: true, sortOrder: 2 },
      ],
    );
    request = orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject, {
      patient: PATIENT,
      ordering_provider: PROVIDER,
      aoe_answers: AOE_ANSWERS,
      clinical_notes: CLINICAL_NOTES,
      region: tenant.region,
      billing_mode: 'self_pay',
      collection_location: 'LOC-1',
      requested_collection_at: '2026-12-01T09:30:00Z',
    });

    const idempotencyKey = unique('idem');
    const created = record('create', await client.create(request, { idempotencyKey }));
    orderId = expectSuccess(created, 201).order_id;
    record('replayed create', await client.create(request, { idempotencyKey }));
    record('create with a reused key and another body', await client.create({ ...request, clinical_notes: `${CLINICAL_NOTES} (v2)` }, { idempotencyKey }));
    record('create with a duplicate external_order_id', await client.create(request));
    record('create refused as not orderable', await client.create({ ...request, external_order_id: unique('ext'), external_subject_id: unique('unregistered'), aoe_answers: AOE_ANSWERS.slice(1) }));
    record('create with an invalid personal field', await client.create({ ...request, external_order_id: unique('ext'), patient: { ...PATIENT, email: REFUSED.email } }));
    record('create with an unknown personal field', await client.create({ ...request, external_order_id: unique('ext'), patient: { ...PATIENT, nickname: REFUSED.nickname } }));
    record('get', await client.get(orderId));
    record('events', await client.events());
    record('requirements', await client.requirements(tenant.sandbox.program.id, `?item_id=${tenant.sandbox.item.id}`));
    // The order's other read endpoints: only checked for leaks here, their behaviour is tested elsewhere.
    for (const path of ['exceptions', 'results']) record(`GET ${path}`, await api.call('GET', `/v1/orders/${orderId}/${path}`, { key: client.key }));
    record('cancel', await client.cancel(orderId));
    record('cancel again', await client.cancel(orderId));
    record('events after cancel', await client.events());
  });

  it('the order with every personal field was accepted, and the refusals were the expected ones', () => {
    const statuses = Object.fromEntries(responses.filter(({ what }) => !what.startsWith('GET ')).map(({ what, response }) => [what, response.status]));
    expect(statuses).toEqual({
      create: 201,
      'replayed create': 201,
      'create with a reused key and another body': 409,
      'create with a duplicate external_order_id': 409,
      'create refused as not orderable': 422,
      'create with an invalid personal field': 400,
      'create with an unknown personal field': 400,
      get: 200,
      events: 200,
      requirements: 200,
      cancel: 200,
      'cancel again': 409,
      'events after cancel': 200,
    });
    const notOrderable = responses.find((r) => r.what === 'create refused as not orderable')!.response;
    expect(expectError(notOrderable, 422, 'not_orderable').details!.map((d) => d.field)).toEqual(['external_subject_id', 'aoe_answers.current_medication']);
  });

  it('no partner response (body or headers) contains any personal value', () => {
    for (const { what, response } of responses) {
      expectNoPersonalData(response.text, `${what} response body`);
      expectNoPersonalData(JSON.stringify([...response.headers.entries()]), `${what} response headers`);
    }
  });

  it('the Order resource has no personal fields at all', () => {
    const order = expectSuccess(responses.find((r) => r.what === 'get')!.response);
    for (const field of ['patient', 'ordering_provider', 'aoe_answers', 'clinical_notes', ...PATIENT_FIELDS]) expect(order).not.toHaveProperty(field);
  });

  it('no event row contains any personal value', async () => {
    const rows = await sql<{ data: string }[]>`select data::text as data from events where client_id = ${tenant.clientId}`;
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const row of rows) expectNoPersonalData(row.data, 'events.data');
  });

  it('no captured log line contains any personal value (the log did record these requests)', () => {
    const text = api.log.text();
    const logged = new Set(api.log.lines.map((line) => line.request_id));
    for (const { what, response } of responses) expect(logged.has(response.headers.get('x-request-id')), `${what} is logged with its request_id`).toBe(true);
    expectNoPersonalData(text, 'the log');
  });

  it('orders.protected_data is ciphertext that decrypts back to exactly what was sent', async () => {
    const [row] = await sql<{ protected_data: string }[]>`select protected_data from orders where id = ${orderId}`;
    expectNoPersonalData(row.protected_data, 'orders.protected_data');
    expect(row.protected_data).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(api.protector.decrypt(row.protected_data)).toEqual({ patient: PATIENT, ordering_provider: PROVIDER, aoe_answers: AOE_ANSWERS, clinical_notes: CLINICAL_NOTES });
  });

  it('no other column of any table holds a personal value in plain text', async () => {
    const tables = await sql<{ schema: string; name: string }[]>`
      select table_schema as schema, table_name as name from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`;
    expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['orders', 'events', 'idempotency_keys', 'subjects']));
    for (const table of tables) {
      const rows = await sql.unsafe<{ row: string }[]>(`select t::text as row from "${table.schema}"."${table.name}" t`);
      for (const { row } of rows) expectNoPersonalData(row, `${table.schema}.${table.name}`);
    }
  });
});
