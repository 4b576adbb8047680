import { beforeAll, describe, expect, it } from 'vitest';
import { type ItemRow, type LaboratoryRow, type ProgramRow } from '@lop/testing';
import { expectSuccess } from '../testing/expect-envelope';
import { useScene } from '../testing/scene';

const NOTHING_REQUIRED = {
  subject: { mode: 'opaque_reference', required_patient_fields: [], authority_state: 'not_configured' },
  order: { required_fields: [], authority_state: 'not_configured' },
  provider: { requirement: 'not_required', required_fields: [], authority_state: 'not_configured', license_authority_state: 'not_modeled' },
  aoe: { authority_state: 'not_configured', questions: [] },
  billing: { mode_required: false, authority_state: 'not_configured' },
};

describe('GET /v1/programs/{programId}/requirements', () => {
  const { api, fixtures: f } = useScene();
  let key: string;
  let lab: LaboratoryRow;
  let bare: ProgramRow;
  let bareItem: ItemRow;
  let dormant: ProgramRow;
  let layered: ProgramRow;
  let item1: ItemRow;
  let item2: ItemRow;
  const profiles: Record<string, string> = {};

  const get = async (program: ProgramRow, query = '') => expectSuccess(await api.call('GET', `/v1/programs/${program.id}/requirements${query}`, { key }));

  beforeAll(async () => {
    lab = await f.laboratory({ certificationIdentifiers: ['CLIA 11D1111111', 'CAP 1111111'] });
    const client = await f.client(lab.id);
    key = await f.key(client.client_id, 'sandbox');

    // No profile at all.
    bare = await f.program(lab.id, { jurisdiction: 'US-CA', serviceGeography: ['US-CA', 'US-NY'], collectionMethods: ['in_person_draw', 'at_home_kit'] });
    bareItem = await f.item(bare.id);
    // A profile whose facets carry values but are all not_configured: they must require nothing.
    dormant = await f.program(lab.id);
    await f.requirementProfile(
      dormant.id,
      {
        subjectRequiredPatientFields: ['legal_first_name', 'date_of_birth'],
        orderRequiredFields: ['external_order_id'],
        providerRequirement: 'required',
        providerRequiredFields: ['npi'],
        billingModeRequired: true,
        billingModes: ['insurance'],
      },
      [{ questionKey: 'fasting', prompt: 'Fasted?', answerType: 'boolean', required: true }],
    );
    // Program-wide, region-specific, item-specific and item+region profiles.
    layered = await f.program(lab.id, { serviceGeography: ['US-CA', 'US-NY'], collectionMethods: ['in_person_draw', 'at_home_kit'] });
    item1 = await f.item(layered.id, { collectionMethods: ['in_person_draw'] });
    item2 = await f.item(layered.id);
    const base = { orderAuthorityState: 'configured' as const, orderRequiredFields: ['external_order_id', 'collection'], billingAuthorityState: 'configured' as const };
    profiles.program = (await f.requirementProfile(layered.id, { ...base, jurisdiction: 'US' })).id;
    profiles.region = (await f.requirementProfile(layered.id, { ...base, region: 'US-NY', jurisdiction: 'US-NY', billingModeRequired: true })).id;
    profiles.item = (
      await f.requirementProfile(layered.id, {
        ...base,
        itemId: item1.id,
        jurisdiction: 'US-ITEM',
        providerAuthorityState: 'configured',
        providerRequirement: 'required',
        providerRequiredFields: ['provider_reference', 'npi'],
      })
    ).id;
    profiles.itemRegion = (
      await f.requirementProfile(
        layered.id,
        {
          ...base,
          itemId: item1.id,
          region: 'US-NY',
          jurisdiction: 'US-NY-ITEM',
          subjectAuthorityState: 'configured',
          subjectRequiredPatientFields: ['legal_first_name', 'legal_last_name', 'date_of_birth'],
          aoeAuthorityState: 'configured',
          clinicalIntakeRequired: true,
          clinicalPolicy: 'lab_physician',
          collectionRegions: ['US-NY'],
        },
        [
          { questionKey: 'b_second', prompt: 'Second?', answerType: 'string', required: false, sortOrder: 2, version: 3 },
          { questionKey: 'a_first', prompt: 'First?', answerType: 'single_choice', options: ['yes', 'no'], required: true, sortOrder: 1 },
        ],
      )
    ).id;
    for (const program of [bare, dormant, layered]) await f.grant(client.client_id, program);
  });

  it('a program with no configured profile requires nothing, every facet not_configured', async () => {
    const data = await get(bare);
    expect(data).toMatchObject({ program_id: bare.id, jurisdiction: 'US-CA', environment: 'sandbox', ...NOTHING_REQUIRED });
    expect(data.clinical).toMatchObject({ intake_required: false, requirement_state: 'not_configured' });
    expect(data.collection).toEqual({ methods: ['in_person_draw', 'at_home_kit'], regions: ['US-CA', 'US-NY'] });
  });

  it('the same with item_id and region: nothing required, and item_id echoed', async () => {
    const data = await get(bare, `?item_id=${bareItem.id}&region=US-NY`);
    expect(data).toMatchObject({ program_id: bare.id, item_id: bareItem.id, ...NOTHING_REQUIRED });
  });

  it('not_configured facets require nothing even when the profile row holds values for them', async () => {
    const data = await get(dormant);
    expect(data).toMatchObject(NOTHING_REQUIRED);
  });

  it('the program-wide profile applies without item_id or region', async () => {
    const data = await get(layered);
    expect(data.jurisdiction).toBe('US');
    expect(data.clinical.requirement_id).toBe(profiles.program);
    expect(data.order).toEqual({ required_fields: ['external_order_id', 'collection'], authority_state: 'configured' });
    expect(data.billing).toEqual({ mode_required: false, authority_state: 'configured', accepted_modes: [] });
    expect(data.provider.requirement).toBe('not_required');
  });

  it('a region-specific profile wins over the program-wide one', async () => {
    const data = await get(layered, '?region=US-NY');
    expect(data.clinical.requirement_id).toBe(profiles.region);
    expect(data.jurisdiction).toBe('US-NY');
    expect(data.billing.mode_required).toBe(true);
  });

  it('a required billing mode is one of order.required_fields: the two facets never disagree', async () => {
    const data = await get(layered, '?region=US-NY');
    expect(data.billing.mode_required).toBe(true);
    expect(data.order.required_fields).toEqual(['external_order_id', 'collection', 'billing_mode']);
    // Without it, the program-wide profile requires no billing mode and lists none.
    expect((await get(layered, '?region=US-CA')).order.required_fields).toEqual(['external_order_id', 'collection']);
  });

  it('a region with no profile of its own falls back to the program-wide profile', async () => {
    const data = await get(layered, '?region=US-CA');
    expect(data.clinical.requirement_id).toBe(profiles.program);
  });

  it('an item-specific profile wins over the program-wide one', async () => {
    const data = await get(layered, `?item_id=${item1.id}`);
    expect(data.item_id).toBe(item1.id);
    expect(data.clinical.requirement_id).toBe(profiles.item);
    expect(data.provider).toEqual({ requirement: 'required', required_fields: ['provider_reference', 'npi'], authority_state: 'configured', license_authority_state: 'not_modeled' });
    expect(data.collection.methods).toEqual(['in_person_draw']);
  });

  it('an item+region profile wins over both the item-only and the region-only profile', async () => {
    const data = await get(layered, `?item_id=${item1.id}&region=US-NY`);
    expect(data.clinical.requirement_id).toBe(profiles.itemRegion);
    expect(data.jurisdiction).toBe('US-NY-ITEM');
    expect(data.subject).toEqual({ mode: 'opaque_reference', required_patient_fields: ['legal_first_name', 'legal_last_name', 'date_of_birth'], authority_state: 'configured' });
    expect(data.clinical).toMatchObject({ policy: 'lab_physician', intake_required: true });
    expect(data.collection.regions).toEqual(['US-NY']);
    expect(data.aoe.authority_state).toBe('configured');
    expect(data.aoe.questions).toEqual([
      { question_key: 'a_first', prompt: 'First?', answer_type: 'single_choice', options: ['yes', 'no'], required: true, version: 1 },
      { question_key: 'b_second', prompt: 'Second?', answer_type: 'string', options: [], required: false, version: 3 },
    ]);
  });

  it('an item without its own profile in a region gets the region profile', async () => {
    const data = await get(layered, `?item_id=${item2.id}&region=US-NY`);
    expect(data.clinical.requirement_id).toBe(profiles.region);
    expect(data.item_id).toBe(item2.id);
  });

  it('GET /v1/lab reports certifications with state not_modeled and the declared identifiers', async () => {
    const data = expectSuccess(await api.call('GET', '/v1/lab', { key }));
    expect(data.laboratory_id).toBe(lab.id);
    expect(data.certifications).toEqual({ state: 'not_modeled', identifiers: ['CLIA 11D1111111', 'CAP 1111111'] });
  });
});
