import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTenant, type ItemRow, type ProgramRow } from '@lop/testing';
import { expectSuccess } from '../testing/expect-envelope';
import { useScene } from '../testing/scene';

describe('POST /v1/serviceability answers stable reason codes', () => {
  const { api, fixtures: f } = useScene();
  let key: string;
  const p: Record<string, ProgramRow> = {};
  const i: Record<string, ItemRow> = {};

  beforeAll(async () => {
    const lab = await f.laboratory();
    const client = await f.client(lab.id);
    key = await f.key(client.client_id, 'sandbox');
    p.active = await f.program(lab.id, { serviceGeography: ['R-SITE', 'R-NO-ACTIVE-SITE', 'R-OTHER-METHOD-SITE'], collectionMethods: ['in_person_draw', 'at_home_kit'] });
    i.any = await f.item(p.active.id);
    i.kitOnly = await f.item(p.active.id, { collectionMethods: ['at_home_kit'] });
    i.inactive = await f.item(p.active.id, { status: 'inactive' });
    p.inactive = await f.program(lab.id, { status: 'inactive', serviceGeography: ['R-SITE'] });
    i.ofInactive = await f.item(p.inactive.id);
    p.ungranted = await f.program(lab.id);
    i.ofUngranted = await f.item(p.ungranted.id);
    p.production = await f.program(lab.id, { environment: 'production', serviceGeography: ['R-SITE'] });
    i.ofProduction = await f.item(p.production.id);
    for (const program of [p.active, p.inactive, p.production]) await f.grant(client.client_id, program);
    const other = await buildTenant(f, { region: 'R-SITE' });
    p.otherLab = other.sandbox.program;
    i.ofOtherLab = other.sandbox.item;

    await f.location(lab.id, { region: 'R-SITE', collectionMethods: ['in_person_draw'] });
    await f.location(lab.id, { region: 'R-NO-ACTIVE-SITE', collectionMethods: ['in_person_draw'], serviceStatus: 'inactive' });
    await f.location(lab.id, { region: 'R-NO-ACTIVE-SITE', collectionMethods: ['in_person_draw'], environment: 'production' });
    await f.location(lab.id, { region: 'R-OTHER-METHOD-SITE', collectionMethods: ['site_collection'] });
  });

  const check = async (body: Record<string, unknown>) => expectSuccess(await api.call('POST', '/v1/serviceability', { key, json: body }));

  const cases: { rule: string; body: () => Record<string, unknown>; expected: { serviceable: boolean; reasons: string[] } }[] = [
    { rule: 'serviceable: granted active program, its item, a served region with an active site', body: () => ({ program_id: p.active.id, item_id: i.any.id, region: 'R-SITE', collection: 'in_person_draw' }), expected: { serviceable: true, reasons: [] } },
    { rule: 'serviceable: program and item only', body: () => ({ program_id: p.active.id, item_id: i.any.id }), expected: { serviceable: true, reasons: [] } },
    { rule: 'serviceable: a kit needs no site in the region', body: () => ({ program_id: p.active.id, item_id: i.kitOnly.id, region: 'R-NO-ACTIVE-SITE', collection: 'at_home_kit' }), expected: { serviceable: true, reasons: [] } },
    { rule: 'program_not_available: unknown program', body: () => ({ program_id: randomUUID(), item_id: i.any.id }), expected: { serviceable: false, reasons: ['program_not_available'] } },
    { rule: 'program_not_available: ungranted program', body: () => ({ program_id: p.ungranted.id, item_id: i.ofUngranted.id }), expected: { serviceable: false, reasons: ['program_not_available'] } },
    { rule: "program_not_available: another laboratory's program", body: () => ({ program_id: p.otherLab.id, item_id: i.ofOtherLab.id }), expected: { serviceable: false, reasons: ['program_not_available'] } },
    { rule: 'program_not_available: a production program with a sandbox key', body: () => ({ program_id: p.production.id, item_id: i.ofProduction.id }), expected: { serviceable: false, reasons: ['program_not_available'] } },
    { rule: 'program_inactive: inactive granted program', body: () => ({ program_id: p.inactive.id, item_id: i.ofInactive.id, region: 'R-SITE', collection: 'in_person_draw' }), expected: { serviceable: false, reasons: ['program_inactive'] } },
    { rule: 'item_not_available: item of another program', body: () => ({ program_id: p.active.id, item_id: i.ofInactive.id }), expected: { serviceable: false, reasons: ['item_not_available'] } },
    { rule: 'item_not_available: unknown item', body: () => ({ program_id: p.active.id, item_id: randomUUID() }), expected: { serviceable: false, reasons: ['item_not_available'] } },
    { rule: 'item_not_available: inactive item', body: () => ({ program_id: p.active.id, item_id: i.inactive.id }), expected: { serviceable: false, reasons: ['item_not_available'] } },
    { rule: 'region_not_served: region outside the program geography', body: () => ({ program_id: p.active.id, item_id: i.any.id, region: 'R-NOWHERE' }), expected: { serviceable: false, reasons: ['region_not_served'] } },
    { rule: 'collection_method_not_supported: method the program lacks', body: () => ({ program_id: p.active.id, item_id: i.any.id, collection: 'mobile_phlebotomy' }), expected: { serviceable: false, reasons: ['collection_method_not_supported'] } },
    { rule: 'collection_method_not_supported: method the item lacks', body: () => ({ program_id: p.active.id, item_id: i.kitOnly.id, region: 'R-SITE', collection: 'in_person_draw' }), expected: { serviceable: false, reasons: ['collection_method_not_supported'] } },
    { rule: 'no_active_location_in_region: only inactive (or other-environment) sites', body: () => ({ program_id: p.active.id, item_id: i.any.id, region: 'R-NO-ACTIVE-SITE', collection: 'in_person_draw' }), expected: { serviceable: false, reasons: ['no_active_location_in_region'] } },
    { rule: 'no_active_location_in_region: the region’s site does not perform the method', body: () => ({ program_id: p.active.id, item_id: i.any.id, region: 'R-OTHER-METHOD-SITE', collection: 'in_person_draw' }), expected: { serviceable: false, reasons: ['no_active_location_in_region'] } },
    { rule: 'several reasons at once', body: () => ({ program_id: p.active.id, item_id: i.any.id, region: 'R-NOWHERE', collection: 'mobile_phlebotomy' }), expected: { serviceable: false, reasons: ['region_not_served', 'collection_method_not_supported'] } },
  ];

  it.each(cases)('$rule', async ({ body, expected }) => {
    expect(await check(body())).toEqual(expected);
  });

  it('program_id and item_id are required (400 naming each)', async () => {
    const response = await api.call('POST', '/v1/serviceability', { key, json: {} });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    expect(response.body.error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'program_id', issue: 'required' }), expect.objectContaining({ field: 'item_id', issue: 'required' })]),
    );
  });

  it('an unknown body field is 400 unknown_field', async () => {
    const response = await api.call('POST', '/v1/serviceability', { key, json: { program_id: p.active.id, item_id: i.any.id, zip: '90210' } });
    expect(response.status).toBe(400);
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'zip', issue: 'unknown_field' })]);
  });
});
