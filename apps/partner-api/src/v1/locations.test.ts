import { beforeAll, describe, expect, it } from 'vitest';
import { type LocationRow } from '@lop/testing';
import { expectList } from '../testing/expect-envelope';
import { useScene } from '../testing/scene';

/**
 * Spec: "Only active locations in the service geography of the key's granted active programs,
 * in the current environment, are listed." Street address, telephone and operational detail never.
 */
describe('GET /v1/locations follows the spec location rule', () => {
  const { api, fixtures: f } = useScene();
  let sandboxKey: string;
  let productionKey: string;
  let emptyClientKey: string;
  const listed: Record<string, LocationRow> = {};
  const hidden: Record<string, LocationRow> = {};

  beforeAll(async () => {
    const lab = await f.laboratory();
    const otherLab = await f.laboratory();
    const client = await f.client(lab.id);
    const grant = async (program: Awaited<ReturnType<typeof f.program>>) => f.grant(client.client_id, program);

    await grant(await f.program(lab.id, { serviceGeography: ['R-ACTIVE-1', 'R-ACTIVE-2'] }));
    await grant(await f.program(lab.id, { serviceGeography: ['R-INACTIVE-PROGRAM'], status: 'inactive' }));
    await f.program(lab.id, { serviceGeography: ['R-UNGRANTED'] });
    await grant(await f.program(lab.id, { environment: 'production', serviceGeography: ['R-PRODUCTION'] }));
    const otherClient = await f.client(lab.id);
    await f.grant(otherClient.client_id, await f.program(lab.id, { serviceGeography: ['R-OTHER-CLIENT'] }));

    listed.activeInGrantedRegion = await f.location(lab.id, { region: 'R-ACTIVE-1' });
    listed.secondGrantedRegion = await f.location(lab.id, { region: 'R-ACTIVE-2', streetAddress: '1 Secret Lane', telephone: '+1-555-0142', operationalNotes: 'Alarm code 4242' });
    hidden.inactiveLocation = await f.location(lab.id, { region: 'R-ACTIVE-1', serviceStatus: 'inactive' });
    hidden.regionOfInactiveProgram = await f.location(lab.id, { region: 'R-INACTIVE-PROGRAM' });
    hidden.regionOfUngrantedProgram = await f.location(lab.id, { region: 'R-UNGRANTED' });
    hidden.regionOfOtherClientsProgram = await f.location(lab.id, { region: 'R-OTHER-CLIENT' });
    hidden.regionNoProgramServes = await f.location(lab.id, { region: 'R-NOBODY' });
    hidden.productionLocationInSandboxRegion = await f.location(lab.id, { region: 'R-ACTIVE-1', environment: 'production' });
    hidden.sandboxLocationInProductionRegion = await f.location(lab.id, { region: 'R-PRODUCTION' });
    hidden.otherLaboratorySameRegion = await f.location(otherLab.id, { region: 'R-ACTIVE-1' });
    listed.productionOnly = await f.location(lab.id, { region: 'R-PRODUCTION', environment: 'production' });

    sandboxKey = await f.key(client.client_id, 'sandbox');
    productionKey = await f.key(client.client_id, 'production');
    const lonely = await f.client(lab.id);
    emptyClientKey = await f.key(lonely.client_id, 'sandbox');
  });

  it('lists exactly the active locations in regions of granted active programs, in the key’s environment', async () => {
    const ids = expectList(await api.call('GET', '/v1/locations', { key: sandboxKey })).map((l: { location_id: string }) => l.location_id);
    expect(ids.sort()).toEqual([listed.activeInGrantedRegion.id, listed.secondGrantedRegion.id].sort());
  });

  it.each([
    'inactiveLocation',
    'regionOfInactiveProgram',
    'regionOfUngrantedProgram',
    'regionOfOtherClientsProgram',
    'regionNoProgramServes',
    'productionLocationInSandboxRegion',
    'sandboxLocationInProductionRegion',
    'otherLaboratorySameRegion',
  ])('does not list %s', async (name) => {
    const ids = expectList(await api.call('GET', '/v1/locations', { key: sandboxKey })).map((l: { location_id: string }) => l.location_id);
    expect(ids).not.toContain(hidden[name].id);
  });

  it('a production key sees only production locations of its granted production programs', async () => {
    const ids = expectList(await api.call('GET', '/v1/locations', { key: productionKey })).map((l: { location_id: string }) => l.location_id);
    expect(ids).toEqual([listed.productionOnly.id]);
  });

  it('a client with no granted program sees an empty list', async () => {
    expect(expectList(await api.call('GET', '/v1/locations', { key: emptyClientKey }))).toEqual([]);
  });

  it('street address, telephone and operational notes never appear in the body', async () => {
    const response = await api.call('GET', '/v1/locations', { key: sandboxKey });
    const data = expectList(response);
    for (const secret of ['1 Secret Lane', '+1-555-0142', 'Alarm code 4242', '742 Evergreen Terrace', '+1-555-0199', 'Courier pickup']) {
      expect(response.text).not.toContain(secret);
    }
    for (const location of data) {
      for (const field of ['street_address', 'streetAddress', 'address', 'telephone', 'phone', 'operational_notes', 'operationalNotes', 'notes']) {
        expect(location).not.toHaveProperty(field);
      }
    }
  });
});
