import { describe, expect, it } from 'vitest';
import { createOrderBodySchema, demoId, grantPrograms, SANDBOX_SUBJECT_ID } from '@lop/domain';
import { buildTenant, unique } from '@lop/testing';
import { expectError, expectList, expectSuccess } from '../testing/expect-envelope';
import { ordersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

const CONTRACTS = ['minimal', 'provider', 'patient', 'aoe'];

describe('GET /v1/sandbox/order-fixtures: request templates valid as-is for POST /v1/orders', () => {
  /** scene.key: a sandbox key of a brand-new API client of the demo laboratory, granted every demo sandbox program. */
  const scene = useScene({ rateLimit: false, partner: 'demo', key: true });
  const { api, connection, fixtures: f } = scene;

  const listFixtures = async (key: string) => expectList(await api.call('GET', '/v1/sandbox/order-fixtures', { key }));

  it('lists one template per contract, each naming its contract and describing itself, in the order minimal, provider, patient, aoe', async () => {
    const listed = await listFixtures(scene.key);
    expect(listed.map((fixture) => fixture.contract)).toEqual(CONTRACTS);
    for (const fixture of listed) {
      expect(Object.keys(fixture).sort()).toEqual(['available', 'body', 'contract', 'description', 'requirements_path', 'unavailable_reason']);
      expect(fixture).toMatchObject({ available: true, unavailable_reason: null });
      expect(fixture.description.length).toBeGreaterThan(20);
      expect(createOrderBodySchema.safeParse(fixture.body).success).toBe(true);
      expect(fixture.body.external_subject_id).toBe(SANDBOX_SUBJECT_ID);
    }
  });

  it('each contract uses a granted sandbox test whose requirements profile really asks for that (demo: CBC, HbA1c, lipid panel, TSH)', async () => {
    const byContract = Object.fromEntries((await listFixtures(scene.key)).map((fixture) => [fixture.contract, fixture]));
    const wellness = demoId('program:wellness-sbx');
    expect(byContract.minimal.body).toMatchObject({ program_id: wellness, item_id: demoId('item:wellness-sbx:CBC') });
    expect(byContract.provider.body).toMatchObject({ program_id: wellness, item_id: demoId('item:wellness-sbx:HBA1C') });
    expect(byContract.patient.body).toMatchObject({ program_id: wellness, item_id: demoId('item:wellness-sbx:LIPID') });
    expect(byContract.aoe.body).toMatchObject({ program_id: wellness, item_id: demoId('item:wellness-sbx:TSH') });

    expect(Object.keys(byContract.minimal.body).sort()).toEqual(['collection', 'external_order_id', 'external_subject_id', 'item_id', 'program_id', 'region']);
    expect(Object.keys(byContract.provider.body.ordering_provider).sort()).toEqual(['name', 'npi', 'provider_reference']);
    expect(Object.keys(byContract.patient.body.patient).sort()).toEqual(['date_of_birth', 'legal_first_name', 'legal_last_name', 'sex_at_birth']);
    expect(byContract.aoe.body.aoe_answers.map((a: { question_key: string }) => a.question_key)).toEqual(['fasting_status', 'thyroid_medication']);
    // Each template carries only what its own contract asks for.
    const extras = (body: Record<string, unknown>) => ['ordering_provider', 'patient', 'aoe_answers'].filter((field) => field in body);
    expect(CONTRACTS.map((contract) => extras(byContract[contract].body))).toEqual([[], ['ordering_provider'], ['patient'], ['aoe_answers']]);

    // The profile each body was built from is the partner's own requirements endpoint.
    for (const fixture of Object.values(byContract) as any[]) {
      const profile = expectSuccess(await api.call('GET', fixture.requirements_path, { key: scene.key }));
      expect(profile).toMatchObject({ program_id: fixture.body.program_id, item_id: fixture.body.item_id });
    }
  });

  it('every fixture, as returned, creates an order (201) after setting a fresh external_order_id — for a client that never registered a subject', async () => {
    const client = ordersClient(api, scene.key);
    for (const fixture of await listFixtures(scene.key)) {
      const response = await client.create({ ...fixture.body, external_order_id: unique(`fixture-${fixture.contract}`) });
      const order = expectSuccess(response, 201);
      expect(order).toMatchObject({ program_id: fixture.body.program_id, item_id: fixture.body.item_id, external_subject_id: SANDBOX_SUBJECT_ID, lifecycle_detail: 'received' });
    }
  });

  it('the generated external_order_id is fresh on every listing, so a body is also valid exactly as returned', async () => {
    const [first, second] = [await listFixtures(scene.key), await listFixtures(scene.key)];
    expect(first[0].body.external_order_id).not.toBe(second[0].body.external_order_id);
    expectSuccess(await ordersClient(api, scene.key).create(second[0].body), 201);
  });

  it('a client whose granted tests require nothing extra: minimal is available and orderable; provider, patient and aoe say why they are unavailable', async () => {
    const tenant = await buildTenant(f);
    const key = await tenant.key();
    const listed = await listFixtures(key);
    expect(listed.map((fixture) => [fixture.contract, fixture.available])).toEqual([
      ['minimal', true],
      ['provider', false],
      ['patient', false],
      ['aoe', false],
    ]);
    expect(listed[0].body).toMatchObject({ program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, region: tenant.region });
    for (const fixture of listed.slice(1)) {
      expect(fixture).toMatchObject({ body: null, requirements_path: null });
      expect(fixture.unavailable_reason).toMatch(/none of your granted/i);
    }
    expectSuccess(await ordersClient(api, key).create({ ...listed[0].body, external_order_id: unique('fixture') }), 201);
  });

  it('listing writes nothing: no subject link appears; the sandbox subject is built in, so a fixture body orders without a GET first, in the sandbox only', async () => {
    const demo = await f.demo();
    const fresh = await f.client(demo.laboratory_id);
    await grantPrograms(connection.db, { clientId: fresh.client_id, environment: 'sandbox', all: true });
    await grantPrograms(connection.db, { clientId: fresh.client_id, environment: 'production', all: true });
    const key = await f.key(fresh.client_id, 'sandbox');
    const links = async () => (await connection.sql`select count(*)::int as n from subjects where client_id = ${fresh.client_id}`)[0].n;

    const [minimal] = await listFixtures(key);
    await listFixtures(key);
    expect(await links()).toBe(0);
    // The body works on its own: the sandbox subject is registered for every sandbox client by definition.
    expectSuccess(await ordersClient(api, key).create({ ...minimal.body, external_order_id: unique('built-in') }), 201);
    expect(await links()).toBe(0);

    // Production has no built-in subject: the same id must be registered like any other.
    const production = ordersClient(api, await f.key(fresh.client_id, 'production'));
    const programs = expectList(await api.call('GET', '/v1/programs', { key: production.key }));
    const program = programs[0];
    const catalog = expectList(await api.call('GET', `/v1/programs/${program.program_id}/catalog`, { key: production.key }));
    const error = expectError(
      await production.create({ ...minimal.body, program_id: program.program_id, item_id: catalog[0].item_id, external_order_id: unique('prod') }),
      422,
      'not_orderable',
    );
    expect(error.details).toContainEqual(expect.objectContaining({ field: 'external_subject_id', issue: 'subject_not_registered' }));
  });

  it('a production key gets an empty list: fixtures exist only in the sandbox', async () => {
    const tenant = await buildTenant(f);
    expect(await listFixtures(await tenant.key({ environment: 'production' }))).toEqual([]);
  });

  it('needs only a valid, active key (no particular scope); no key is 401', async () => {
    const tenant = await buildTenant(f);
    expect(await listFixtures(await tenant.key({ scopes: ['events:read'] }))).toHaveLength(4);
    expectError(await api.call('GET', '/v1/sandbox/order-fixtures'), 401, 'unauthorized');
  });
});
