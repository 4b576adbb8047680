import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { expectList, expectSuccess, strings, ts, uuid } from '../testing/expect-envelope';
import { useScene } from '../testing/scene';

// The spec's resource tables, written out independently of the implementation's schemas:
// strict objects, so an extra field (a leak) fails as surely as a missing one.
const environment = z.enum(['sandbox', 'production']);
const spec = {
  health: z.strictObject({ status: z.string(), version: z.string(), environment, server_time: ts }),
  lab: z.strictObject({
    laboratory_id: uuid,
    display_name: z.string(),
    legal_name: z.string(),
    operating_name: z.string(),
    environment,
    certifications: z.strictObject({ state: z.literal('not_modeled'), identifiers: strings }),
    jurisdictions: strings,
    service_geography: strings,
    collection_methods: strings,
    collection_modes: strings,
    specimen_categories: strings,
    coding_systems_supplied: strings,
  }),
  location: z.strictObject({
    location_id: uuid,
    location_code: z.string(),
    name: z.string(),
    region: z.string(),
    city: z.string(),
    country: z.string(),
    timezone: z.string(),
    collection_methods: strings,
    appointment_required: z.boolean(),
    walk_in_allowed: z.boolean(),
    service_status: z.literal('active'),
  }),
  program: z.strictObject({ program_id: uuid, name: z.string(), status: z.string(), currency: z.string(), environment }),
  catalogItem: z.strictObject({
    item_id: uuid,
    lab_orderable_id: uuid,
    lab_test_code: z.string(),
    code: z.string(),
    description: z.string(),
    external_code: z.string(),
    name: z.string(),
    kind: z.string(),
    performing_laboratory: z.string(),
    specimen_type: z.string(),
    container: z.string(),
    min_volume_ml: z.number(),
  }),
  requirements: z.strictObject({
    program_id: uuid,
    item_id: uuid.optional(),
    jurisdiction: z.string(),
    environment,
    subject: z.strictObject({ mode: z.literal('opaque_reference'), required_patient_fields: strings, authority_state: z.enum(['configured', 'not_configured']) }),
    order: z.strictObject({ required_fields: strings, authority_state: z.string() }),
    provider: z.strictObject({ requirement: z.string(), required_fields: strings, authority_state: z.string(), license_authority_state: z.literal('not_modeled') }),
    aoe: z.strictObject({
      authority_state: z.string(),
      questions: z.array(
        z.strictObject({ question_key: z.string(), prompt: z.string(), answer_type: z.string(), options: strings, required: z.boolean(), version: z.number().int() }),
      ),
    }),
    clinical: z.strictObject({
      policy: z.string(),
      ordering_model: z.string(),
      clinical_review: z.string(),
      intake_required: z.boolean(),
      // A uuid when a profile is configured; null when the laboratory configured none.
      requirement_id: uuid.nullable(),
      requirement_state: z.string(),
    }),
    collection: z.strictObject({ methods: strings, regions: strings }),
    billing: z.strictObject({ mode_required: z.boolean(), authority_state: z.string(), accepted_modes: strings }),
  }),
  serviceability: z.strictObject({ serviceable: z.boolean(), reasons: strings }),
  subjectLink: z.strictObject({ external_subject_id: z.string(), linked: z.boolean() }),
};

function matches(schema: z.ZodType, value: unknown) {
  const parsed = schema.safeParse(value);
  expect(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues, null, 1)).toBe(true);
}

describe('read endpoints answer the spec fields and types in the success envelope', () => {
  const { api, fixtures: f } = useScene();
  let key: string;
  let wellness: string;
  let itemId: string;

  beforeAll(async () => {
    const demo = await f.demo();
    key = demo.key;
    wellness = demo.program('Everyday Wellness (Sandbox)');
    const catalog = await api.call('GET', `/v1/programs/${wellness}/catalog`, { key });
    itemId = catalog.body.data.find((item: { code: string }) => item.code === 'TSH').item_id;
  });

  it('GET /v1/health: status, version, environment and server_time', async () => {
    const data = expectSuccess(await api.call('GET', '/v1/health', { key }));
    matches(spec.health, data);
    expect(data.environment).toBe('sandbox');
    expect(Math.abs(Date.parse(data.server_time) - Date.now())).toBeLessThan(60_000);
  });

  it('GET /v1/lab: the capability profile with certifications not_modeled', async () => {
    const data = expectSuccess(await api.call('GET', '/v1/lab', { key }));
    matches(spec.lab, data);
    expect(data.certifications.state).toBe('not_modeled');
    expect(data.environment).toBe('sandbox');
  });

  it('GET /v1/locations: a list of locations, cursor null', async () => {
    const data = expectList(await api.call('GET', '/v1/locations', { key }));
    expect(data.length).toBeGreaterThan(0);
    for (const location of data) matches(spec.location, location);
  });

  it('GET /v1/programs: a list of programs, cursor null', async () => {
    const data = expectList(await api.call('GET', '/v1/programs', { key }));
    expect(data.map((p: { program_id: string }) => p.program_id)).toContain(wellness);
    for (const program of data) {
      matches(spec.program, program);
      expect(program.environment).toBe('sandbox');
    }
  });

  it('GET /v1/programs/{programId}: one program', async () => {
    const data = expectSuccess(await api.call('GET', `/v1/programs/${wellness}`, { key }));
    matches(spec.program, data);
    expect(data).toMatchObject({ program_id: wellness, name: 'Everyday Wellness (Sandbox)', status: 'active', currency: 'USD', environment: 'sandbox' });
  });

  it('GET /v1/programs/{programId}/catalog: a list of catalog items, cursor null', async () => {
    const data = expectList(await api.call('GET', `/v1/programs/${wellness}/catalog`, { key }));
    expect(data.length).toBeGreaterThan(0);
    for (const item of data) matches(spec.catalogItem, item);
    expect(data.find((item: { code: string }) => item.code === 'LIPID').min_volume_ml).toBe(1.5);
  });

  it('GET /v1/programs/{programId}/requirements: the profile without item_id (no item_id in it)', async () => {
    const data = expectSuccess(await api.call('GET', `/v1/programs/${wellness}/requirements`, { key }));
    matches(spec.requirements, data);
    expect(data.program_id).toBe(wellness);
    expect(data).not.toHaveProperty('item_id');
  });

  it('GET /v1/programs/{programId}/requirements?item_id&region: the profile names the item', async () => {
    const data = expectSuccess(await api.call('GET', `/v1/programs/${wellness}/requirements?item_id=${itemId}&region=US-NY`, { key }));
    matches(spec.requirements, data);
    expect(data.item_id).toBe(itemId);
    expect(data.aoe.questions.length).toBeGreaterThan(0);
  });

  it('POST /v1/serviceability: serviceable and reasons', async () => {
    const data = expectSuccess(
      await api.call('POST', '/v1/serviceability', { key, json: { program_id: wellness, item_id: itemId, region: 'US-CA', collection: 'in_person_draw' } }),
    );
    matches(spec.serviceability, data);
    expect(data).toEqual({ serviceable: true, reasons: [] });
  });

  it('PUT /v1/subjects/{externalSubjectId}: the subject link', async () => {
    const data = expectSuccess(await api.call('PUT', '/v1/subjects/read-endpoints-subject-1', { key }));
    matches(spec.subjectLink, data);
    expect(data).toEqual({ external_subject_id: 'read-endpoints-subject-1', linked: true });
  });

  it('a client-sent X-Request-Id is not taken as ours', async () => {
    const response = await api.call('GET', '/v1/health', { key, headers: { 'x-request-id': 'req_000000000000000000000000' } });
    expectSuccess(response);
    expect(response.body.request_id).not.toBe('req_000000000000000000000000');
  });
});
