import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTenant, type Tenant } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { useScene } from '../testing/scene';

const PROGRAM_ROUTES = [
  { name: 'GET /v1/programs/{programId}', path: (id: string) => `/v1/programs/${id}` },
  { name: 'GET /v1/programs/{programId}/catalog', path: (id: string) => `/v1/programs/${id}/catalog` },
  { name: 'GET /v1/programs/{programId}/requirements', path: (id: string) => `/v1/programs/${id}/requirements` },
];

describe('tenancy: anything outside the key is 404 not_found, never 403', () => {
  const scene = useScene({ key: true });
  const { api, tenant, fixtures: f } = scene;
  let other: Tenant;
  let productionKey: string;
  const programs: Record<string, string> = {};
  const foreignIds: string[] = [];

  beforeAll(async () => {
    other = await buildTenant(f);
    productionKey = await tenant.key({ environment: 'production' });

    // Same laboratory, another API client, a program granted only to that client.
    const secondClient = await f.client(tenant.laboratory.id);
    const otherClientProgram = await f.program(tenant.laboratory.id);
    await f.item(otherClientProgram.id);
    await f.grant(secondClient.client_id, otherClientProgram);
    // Same laboratory and environment, granted to nobody.
    const ungranted = await f.program(tenant.laboratory.id);
    await f.item(ungranted.id);

    programs['an ungranted program of the same laboratory'] = ungranted.id;
    programs["another client's program in the same laboratory"] = otherClientProgram.id;
    programs["another laboratory's granted program"] = other.sandbox.program.id;
    programs["the same client's production program (sandbox key)"] = tenant.production.program.id;
    programs['an unknown program id'] = randomUUID();
    foreignIds.push(secondClient.client_id, other.laboratory.id, other.clientId, tenant.laboratory.id, tenant.clientId);
  });

  it.each(PROGRAM_ROUTES)('$name answers 200 for the key’s own granted program (control)', async ({ path }) => {
    expectSuccess(await api.call('GET', path(tenant.sandbox.program.id), { key: scene.key }));
    expectSuccess(await api.call('GET', path(tenant.production.program.id), { key: productionKey }));
  });

  const cases = PROGRAM_ROUTES.flatMap((route) =>
    [
      'an ungranted program of the same laboratory',
      "another client's program in the same laboratory",
      "another laboratory's granted program",
      "the same client's production program (sandbox key)",
      'an unknown program id',
    ].map((rule) => ({ route: route.name, rule, path: route.path })),
  );

  it.each(cases)('$route: 404 for $rule', async ({ rule, path }) => {
    const response = await api.call('GET', path(programs[rule]), { key: scene.key });
    expectError(response, 404, 'not_found');
    for (const id of foreignIds) expect(response.text).not.toContain(id);
  });

  it.each(PROGRAM_ROUTES)("$name: 404 for the same client's sandbox program with a production key", async ({ path }) => {
    expectError(await api.call('GET', path(tenant.sandbox.program.id), { key: productionKey }), 404, 'not_found');
  });

  const malformed = ['not-a-uuid', '12345', `${randomUUID()}0`, randomUUID().replace(/-/g, ''), 'zzzzzzzz-zzzz-4zzz-8zzz-zzzzzzzzzzzz', '%20', "1'%20or%20'1'='1"];
  it.each(PROGRAM_ROUTES.flatMap((route) => malformed.map((id) => ({ route: route.name, id, path: route.path }))))(
    '$route: 404 for the malformed id "$id"',
    async ({ id, path }) => {
      expectError(await api.call('GET', path(id), { key: scene.key }), 404, 'not_found');
    },
  );

  it('the program list shows only the key’s own granted programs of its environment', async () => {
    const sandbox = await api.call('GET', '/v1/programs', { key: scene.key });
    expect(expectSuccess(sandbox).map((p: { program_id: string }) => p.program_id)).toEqual([tenant.sandbox.program.id]);
    const production = await api.call('GET', '/v1/programs', { key: productionKey });
    expect(expectSuccess(production).map((p: { program_id: string }) => p.program_id)).toEqual([tenant.production.program.id]);
  });

  describe('requirements item_id', () => {
    it('404 for an item of another program', async () => {
      const response = await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?item_id=${other.sandbox.item.id}`, { key: scene.key });
      expectError(response, 404, 'not_found');
    });

    it('404 for an item of the same client’s production program', async () => {
      const response = await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?item_id=${tenant.production.item.id}`, { key: scene.key });
      expectError(response, 404, 'not_found');
    });

    it('404 for an unknown item id', async () => {
      expectError(await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?item_id=${randomUUID()}`, { key: scene.key }), 404, 'not_found');
    });

    it('404 for an inactive item of the program', async () => {
      const inactive = await f.item(tenant.sandbox.program.id, { status: 'inactive' });
      expectError(await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?item_id=${inactive.id}`, { key: scene.key }), 404, 'not_found');
    });

    it('an inactive item is not in the catalog', async () => {
      const inactive = await f.item(tenant.sandbox.program.id, { status: 'inactive' });
      const data = expectSuccess(await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/catalog`, { key: scene.key }));
      expect(data.map((item: { item_id: string }) => item.item_id)).not.toContain(inactive.id);
    });

    it('a malformed item_id in the query is 400 invalid_request naming item_id (not a path id)', async () => {
      const error = expectError(await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?item_id=nope`, { key: scene.key }), 400, 'invalid_request');
      expect(error.details).toContainEqual(expect.objectContaining({ field: 'item_id', issue: 'invalid_format' }));
    });
  });
});
