import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { demoId, grantPrograms } from '@lop/domain';
import { type TestResponse } from '../testing/harness';
import { unique } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { ordersClient, type OrdersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

/** The demo tenant's sandbox programs and tests (libs/domain/src/control-plane/demo-seed.ts). */
const WELLNESS = demoId('program:wellness-sbx');
const LEGACY = demoId('program:legacy-sbx');
const WOMENS = demoId('program:womens-sbx');
const WELLNESS_PRODUCTION = demoId('program:wellness-prod');
const item = (code: string, program = 'wellness-sbx') => demoId(`item:${program}:${code}`);
const WELLNESS_ITEMS = ['CBC', 'HBA1C', 'LIPID', 'TSH', 'VITD', 'UA'];

const PATIENT = {
  legal_first_name: 'Ada',
  legal_last_name: 'Byron',
  date_of_birth: '1980-01-02',
  sex_at_birth: 'female',
  phone: '+1-555-0100',
  email: 'ada@example.org',
  region: 'US-CA',
  address_line1: '1 Main Street',
  address_line2: 'Suite 2',
  city: 'Los Angeles',
  postal_code: '90001',
  country: 'US',
} as Record<string, string>;
const PROVIDER = { provider_reference: randomUUID(), name: 'Dr. Grace Hopper', npi: '1234567893' } as Record<string, string>;

function validAnswer(question: { answer_type: string; options: string[] }): string {
  switch (question.answer_type) {
    case 'single_choice':
      return question.options[0];
    case 'boolean':
      return 'false';
    case 'date':
      return '2026-01-15';
    case 'number':
      return '12.5';
    default:
      return 'a free-text answer';
  }
}

const pick = (values: Record<string, string>, fields: string[]) => Object.fromEntries(fields.map((f) => [f, values[f]]));

/**
 * A create request carrying exactly what the requirements profile says is required, and nothing
 * optional: if create asks for more than the profile shows, this request fails.
 */
function requestFromProfile(profile: any, base: Record<string, unknown>, region?: string): Record<string, any> {
  const request: Record<string, any> = { ...base, collection: profile.collection.methods[0] };
  if (region) request.region = region;
  // The billing facet says which value; order.required_fields lists billing_mode too (checked below).
  if (profile.billing.mode_required) request.billing_mode = profile.billing.accepted_modes[0];
  for (const field of profile.order.required_fields) expect(request, `profile requires order field ${field}`).toHaveProperty(field);
  if (profile.subject.required_patient_fields.length > 0) request.patient = pick(PATIENT, profile.subject.required_patient_fields);
  if (profile.provider.requirement === 'required') request.ordering_provider = pick(PROVIDER, profile.provider.required_fields);
  const required = profile.aoe.questions.filter((q: any) => q.required);
  if (required.length > 0) request.aoe_answers = required.map((q: any) => ({ question_key: q.question_key, answer: validAnswer(q) }));
  return request;
}

/** Each required thing of the profile, with the request lacking it and the field create must name. */
function removals(profile: any, request: Record<string, any>): { what: string; request: Record<string, any>; field: string }[] {
  const without = (mutate: (r: Record<string, any>) => void) => {
    const copy = structuredClone(request);
    mutate(copy);
    return copy;
  };
  const list: { what: string; request: Record<string, any>; field: string }[] = [];
  for (const field of profile.order.required_fields) list.push({ what: `order field ${field}`, field, request: without((r) => delete r[field]) });
  for (const field of profile.subject.required_patient_fields) {
    list.push({ what: `patient.${field}`, field: `patient.${field}`, request: without((r) => delete r.patient[field]) });
  }
  if (profile.provider.requirement === 'required') {
    list.push({ what: 'ordering_provider', field: 'ordering_provider', request: without((r) => delete r.ordering_provider) });
    for (const field of profile.provider.required_fields) {
      list.push({ what: `ordering_provider.${field}`, field: `ordering_provider.${field}`, request: without((r) => delete r.ordering_provider[field]) });
    }
  }
  for (const question of profile.aoe.questions.filter((q: any) => q.required)) {
    list.push({
      what: `answer to ${question.question_key}`,
      field: `aoe_answers.${question.question_key}`,
      request: without((r) => (r.aoe_answers = r.aoe_answers.filter((a: any) => a.question_key !== question.question_key))),
    });
  }
  // A required billing mode is one of the order's required fields.
  expect(profile.order.required_fields.includes('billing_mode')).toBe(profile.billing.mode_required);
  return list;
}

describe('POST /v1/orders: 422 not_orderable, and the requirements profile is exactly what create enforces', () => {
  const { api, connection, fixtures: f } = useScene({ rateLimit: false });
  let client: OrdersClient;
  let subject: string;

  beforeAll(async () => {
    const demo = await f.demo();
    // A client of our own in the demo laboratory keeps these orders out of the demo client's stream.
    const own = await f.client(demo.laboratory_id);
    for (const programId of [WELLNESS, LEGACY]) await grantPrograms(connection.db, { clientId: own.client_id, environment: 'sandbox', programId });
    await grantPrograms(connection.db, { clientId: own.client_id, environment: 'production', all: true });
    client = ordersClient(api, await f.key(own.client_id, 'sandbox'));
    subject = await client.subject();
  });

  const order = (overrides: Record<string, unknown> = {}) => ({
    external_order_id: unique('ext'),
    program_id: WELLNESS,
    item_id: item('CBC'),
    external_subject_id: subject,
    collection: 'in_person_draw',
    ...overrides,
  });

  async function expectNotOrderable(response: TestResponse, details: { field: string; issue: string }[]) {
    const error = expectError(response, 422, 'not_orderable');
    expect(error.details!.map(({ field, issue }) => ({ field, issue }))).toEqual(details);
    for (const detail of error.details!) expect(detail.message, JSON.stringify(detail)).toEqual(expect.any(String));
    return error;
  }

  it('control: a CBC order in the minimal contract → 201', async () => {
    expectSuccess(await client.create(order()), 201);
  });

  describe('each reason', () => {
    it.each([
      { what: 'a program of the laboratory not granted to this client', program: WOMENS, itemId: item('CBC', 'womens-sbx') },
      { what: 'a production program with a sandbox key', program: WELLNESS_PRODUCTION, itemId: item('CBC', 'wellness-prod') },
      { what: 'an unknown program', program: randomUUID(), itemId: item('CBC') },
    ])('program not granted ($what) → program_id program_not_available', async ({ program, itemId }) => {
      await expectNotOrderable(await client.create(order({ program_id: program, item_id: itemId })), [{ field: 'program_id', issue: 'program_not_available' }]);
    });

    it('program inactive → program_id program_inactive', async () => {
      await expectNotOrderable(await client.create(order({ program_id: LEGACY, item_id: item('CBC', 'legacy-sbx') })), [{ field: 'program_id', issue: 'program_inactive' }]);
    });

    it.each([
      { what: "another program's test", itemId: item('CBC', 'womens-sbx') },
      { what: 'an unknown item', itemId: randomUUID() },
    ])('item not in program ($what) → item_id item_not_in_program', async ({ itemId }) => {
      await expectNotOrderable(await client.create(order({ item_id: itemId })), [{ field: 'item_id', issue: 'item_not_in_program' }]);
    });

    it('subject not registered → external_subject_id subject_not_registered', async () => {
      await expectNotOrderable(await client.create(order({ external_subject_id: unique('never-registered') })), [
        { field: 'external_subject_id', issue: 'subject_not_registered' },
      ]);
    });

    it('LIPID without the required patient fields → each one named', async () => {
      await expectNotOrderable(await client.create(order({ item_id: item('LIPID') })), [
        { field: 'patient.legal_first_name', issue: 'required_by_profile' },
        { field: 'patient.legal_last_name', issue: 'required_by_profile' },
        { field: 'patient.date_of_birth', issue: 'required_by_profile' },
        { field: 'patient.sex_at_birth', issue: 'required_by_profile' },
      ]);
      await expectNotOrderable(await client.create(order({ item_id: item('LIPID'), patient: { legal_first_name: 'Ada', legal_last_name: 'Byron', email: 'ada@example.org' } })), [
        { field: 'patient.date_of_birth', issue: 'required_by_profile' },
        { field: 'patient.sex_at_birth', issue: 'required_by_profile' },
      ]);
    });

    it('TSH without its required ask-at-order-entry answers → each question named answer_required', async () => {
      await expectNotOrderable(await client.create(order({ item_id: item('TSH') })), [
        { field: 'aoe_answers.fasting_status', issue: 'answer_required' },
        { field: 'aoe_answers.thyroid_medication', issue: 'answer_required' },
      ]);
      await expectNotOrderable(await client.create(order({ item_id: item('TSH'), aoe_answers: [{ question_key: 'fasting_status', answer: '' }] })), [
        { field: 'aoe_answers.fasting_status', issue: 'answer_required' },
        { field: 'aoe_answers.thyroid_medication', issue: 'answer_required' },
      ]);
    });

    it('TSH with invalid answers (not an option, not a boolean, not a date) and an unknown question → each named', async () => {
      const error = await expectNotOrderable(
        await client.create(
          order({
            item_id: item('TSH'),
            aoe_answers: [
              { question_key: 'fasting_status', answer: 'maybe' },
              { question_key: 'thyroid_medication', answer: 'sometimes' },
              { question_key: 'last_dose_date', answer: 'last tuesday' },
              { question_key: 'favourite_colour', answer: 'blue' },
            ],
          }),
        ),
        [
          { field: 'aoe_answers.favourite_colour', issue: 'unknown_question' },
          { field: 'aoe_answers.fasting_status', issue: 'invalid_answer' },
          { field: 'aoe_answers.thyroid_medication', issue: 'invalid_answer' },
          { field: 'aoe_answers.last_dose_date', issue: 'invalid_answer' },
        ],
      );
      expect(error.details![1].message).toContain('yes, no, unknown');
    });

    it('ask-at-order-entry not configured (CBC) requires and checks nothing: stray answers are accepted', async () => {
      expectSuccess(await client.create(order({ item_id: item('CBC'), aoe_answers: [{ question_key: 'anything', answer: 'x' }] })), 201);
    });

    it('TSH with valid answers → 201 (the optional question may be left out)', async () => {
      const answers = [
        { question_key: 'fasting_status', answer: 'yes' },
        { question_key: 'thyroid_medication', answer: 'true' },
      ];
      expectSuccess(await client.create(order({ item_id: item('TSH'), aoe_answers: answers })), 201);
      expectSuccess(await client.create(order({ item_id: item('TSH'), aoe_answers: [...answers, { question_key: 'last_dose_date', answer: '2026-10-01' }] })), 201);
    });

    it('HBA1C without an ordering provider → ordering_provider; with a partial one → each missing field', async () => {
      await expectNotOrderable(await client.create(order({ item_id: item('HBA1C') })), [{ field: 'ordering_provider', issue: 'required_by_profile' }]);
      await expectNotOrderable(await client.create(order({ item_id: item('HBA1C'), ordering_provider: { name: 'Dr. Grace Hopper' } })), [
        { field: 'ordering_provider.provider_reference', issue: 'required_by_profile' },
        { field: 'ordering_provider.npi', issue: 'required_by_profile' },
      ]);
      expectSuccess(await client.create(order({ item_id: item('HBA1C'), ordering_provider: PROVIDER })), 201);
    });

    it('US-NY without billing_mode → billing_mode required_by_profile; an unaccepted mode → billing_mode_not_accepted', async () => {
      const required = await expectNotOrderable(await client.create(order({ region: 'US-NY' })), [{ field: 'billing_mode', issue: 'required_by_profile' }]);
      // The refusal lists the values the profile accepts, so the 422 alone says how to fix it.
      expect(required.details![0].message).toBe('A billing mode is required in this jurisdiction. Accepted billing modes: client_bill, insurance, self_pay.');
      await expectNotOrderable(await client.create(order({ region: 'US-NY', billing_mode: 'barter' })), [{ field: 'billing_mode', issue: 'billing_mode_not_accepted' }]);
      // Outside New York an unaccepted mode is refused as well, and no mode at all is fine.
      await expectNotOrderable(await client.create(order({ region: 'US-CA', billing_mode: 'barter' })), [{ field: 'billing_mode', issue: 'billing_mode_not_accepted' }]);
      expectSuccess(await client.create(order({ region: 'US-CA' })), 201);
      expectSuccess(await client.create(order({ region: 'US-NY', billing_mode: 'insurance' })), 201);
    });

    it.each([
      { what: 'CBC by at-home kit', itemId: 'CBC', collection: 'at_home_kit' },
      { what: 'TSH by mobile phlebotomy (the TSH profile narrows methods)', itemId: 'TSH', collection: 'mobile_phlebotomy' },
      { what: 'an unknown method', itemId: 'CBC', collection: 'carrier_pigeon' },
    ])('collection method not allowed ($what) → collection collection_method_not_allowed', async ({ itemId, collection }) => {
      const extra = itemId === 'TSH' ? { aoe_answers: [{ question_key: 'fasting_status', answer: 'no' }, { question_key: 'thyroid_medication', answer: 'false' }] } : {};
      await expectNotOrderable(await client.create(order({ item_id: item(itemId), collection, ...extra })), [{ field: 'collection', issue: 'collection_method_not_allowed' }]);
    });

    it('region not served → region region_not_served', async () => {
      await expectNotOrderable(await client.create(order({ region: 'US-WA' })), [{ field: 'region', issue: 'region_not_served' }]);
    });

    it('every problem is listed at once, not just the first', async () => {
      await expectNotOrderable(await client.create(order({ item_id: item('HBA1C'), external_subject_id: unique('unknown'), collection: 'at_home_kit', region: 'US-WA' })), [
        { field: 'external_subject_id', issue: 'subject_not_registered' },
        { field: 'ordering_provider', issue: 'required_by_profile' },
        { field: 'collection', issue: 'collection_method_not_allowed' },
        { field: 'region', issue: 'region_not_served' },
      ]);
    });

    it('a refused create stores nothing and does not use up its Idempotency-Key', async () => {
      const idempotencyKey = unique('idem');
      const refused = order({ item_id: item('HBA1C') });
      await expectNotOrderable(await client.create(refused, { idempotencyKey }), [{ field: 'ordering_provider', issue: 'required_by_profile' }]);
      expect(await connection.sql`select 1 from orders where external_order_id = ${refused.external_order_id}`).toHaveLength(0);
      expect(await connection.sql`select 1 from idempotency_keys where key = ${idempotencyKey}`).toHaveLength(0);
      const fixed = expectSuccess(await client.create({ ...refused, ordering_provider: PROVIDER }, { idempotencyKey }), 201);
      expect(fixed.external_order_id).toBe(refused.external_order_id);
    });
  });

  describe('GET requirements and create agree, for every wellness test and region', () => {
    const cases = WELLNESS_ITEMS.flatMap((code) => [undefined, 'US-CA', 'US-NY'].map((region) => ({ code, region: region ?? '(none)' })));

    it.each(cases)('$code, region $region: the profile-built request → 201; without any one required thing → refused naming it', async ({ code, region: regionText }) => {
      const region = regionText === '(none)' ? undefined : regionText;
      const query = `?item_id=${item(code)}${region ? `&region=${region}` : ''}`;
      const profile = expectSuccess(await client.requirements(WELLNESS, query));
      const request = requestFromProfile(profile, order({ item_id: item(code) }), region);

      for (const removal of removals(profile, request)) {
        // A fresh external_order_id, unless that is the field taken away.
        const response = await client.create('external_order_id' in removal.request ? { ...removal.request, external_order_id: unique('ext') } : removal.request);
        if (response.status === 400) {
          // Fields the schema itself requires are refused before the profile is consulted.
          const error = expectError(response, 400, 'invalid_request');
          expect(error.details, removal.what).toContainEqual(expect.objectContaining({ field: removal.field, issue: 'required' }));
        } else {
          const error = expectError(response, 422, 'not_orderable');
          expect(error.details!.map((d) => d.field), removal.what).toEqual([removal.field]);
        }
      }
      if (profile.collection.methods.length < 3) {
        const other = ['in_person_draw', 'mobile_phlebotomy', 'at_home_kit'].find((m) => !profile.collection.methods.includes(m))!;
        const response = await client.create({ ...request, external_order_id: unique('ext'), collection: other });
        expect(expectError(response, 422, 'not_orderable').details).toEqual([expect.objectContaining({ field: 'collection', issue: 'collection_method_not_allowed' })]);
      }
      const created = expectSuccess(await client.create(request), 201);
      expect(created).toMatchObject({ item_id: item(code), lifecycle_detail: 'received' });
    });

    it('the profiles differ where the demo says they do (so the agreement above is not vacuous)', async () => {
      const profile = async (code: string, region?: string) =>
        expectSuccess(await client.requirements(WELLNESS, `?item_id=${item(code)}${region ? `&region=${region}` : ''}`));
      expect((await profile('LIPID')).subject.required_patient_fields).toEqual(['legal_first_name', 'legal_last_name', 'date_of_birth', 'sex_at_birth']);
      expect((await profile('HBA1C')).provider).toMatchObject({ requirement: 'required', required_fields: ['provider_reference', 'name', 'npi'] });
      expect((await profile('TSH')).aoe.questions.map((q: any) => [q.question_key, q.required])).toEqual([
        ['fasting_status', true],
        ['thyroid_medication', true],
        ['last_dose_date', false],
      ]);
      expect((await profile('CBC', 'US-NY')).billing).toMatchObject({ mode_required: true, accepted_modes: ['client_bill', 'insurance', 'self_pay'] });
    });
  });
});
