import { type Scope, SCOPES } from '@lop/contract';
import { beforeAll, describe, expect, it } from 'vitest';
import { type RequestOptions } from '../testing/harness';
import { type Tenant } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { useScene } from '../testing/scene';

interface Endpoint {
  name: string;
  scope: Scope;
  request(t: Tenant): { method: string; path: string; options?: RequestOptions };
}

// The spec's endpoint table, for the endpoints implemented so far.
const ENDPOINTS: Endpoint[] = [
  { name: 'GET /v1/lab', scope: 'catalog:read', request: () => ({ method: 'GET', path: '/v1/lab' }) },
  { name: 'GET /v1/locations', scope: 'serviceability:read', request: () => ({ method: 'GET', path: '/v1/locations' }) },
  { name: 'GET /v1/programs', scope: 'programs:read', request: () => ({ method: 'GET', path: '/v1/programs' }) },
  { name: 'GET /v1/programs/{programId}', scope: 'programs:read', request: (t) => ({ method: 'GET', path: `/v1/programs/${t.sandbox.program.id}` }) },
  { name: 'GET /v1/programs/{programId}/catalog', scope: 'catalog:read', request: (t) => ({ method: 'GET', path: `/v1/programs/${t.sandbox.program.id}/catalog` }) },
  {
    name: 'GET /v1/programs/{programId}/requirements',
    scope: 'catalog:read',
    request: (t) => ({ method: 'GET', path: `/v1/programs/${t.sandbox.program.id}/requirements?item_id=${t.sandbox.item.id}&region=${t.region}` }),
  },
  {
    name: 'POST /v1/serviceability',
    scope: 'serviceability:read',
    request: (t) => ({ method: 'POST', path: '/v1/serviceability', options: { json: { program_id: t.sandbox.program.id, item_id: t.sandbox.item.id } } }),
  },
  { name: 'PUT /v1/subjects/{externalSubjectId}', scope: 'subjects:write', request: () => ({ method: 'PUT', path: '/v1/subjects/scope-test-subject' }) },
];

describe('scopes: a valid key without the endpoint scope is 403 forbidden', () => {
  const { api, tenant } = useScene({ partner: 'tenant' });
  const only = new Map<Scope, string>();
  const allBut = new Map<Scope, string>();

  beforeAll(async () => {
    for (const scope of SCOPES) {
      only.set(scope, await tenant.key({ scopes: [scope] }));
      allBut.set(scope, await tenant.key({ scopes: SCOPES.filter((s) => s !== scope) }));
    }
  });

  const send = (endpoint: Endpoint, key: string) => {
    const { method, path, options } = endpoint.request(tenant);
    return api.call(method, path, { ...options, key });
  };

  it.each(ENDPOINTS)('$name: every scope except $scope → 403 forbidden naming the scope', async (endpoint) => {
    const error = expectError(await send(endpoint, allBut.get(endpoint.scope)!), 403, 'forbidden');
    expect(error.message).toContain(endpoint.scope);
  });

  it.each(ENDPOINTS)('$name: $scope alone → 200', async (endpoint) => {
    expectSuccess(await send(endpoint, only.get(endpoint.scope)!));
  });

  it.each(ENDPOINTS)('$name: each single scope it does not need → 403', async (endpoint) => {
    for (const scope of SCOPES.filter((s) => s !== endpoint.scope)) {
      const response = await send(endpoint, only.get(scope)!);
      expect(response.status, `${endpoint.name} with only ${scope}`).toBe(403);
      expectError(response, 403, 'forbidden');
    }
  });

  it('the scope check comes before input validation (403, not 400 or 404, for a bad request)', async () => {
    const key = allBut.get('catalog:read')!;
    expectError(await api.call('GET', '/v1/programs/not-a-uuid/catalog', { key }), 403, 'forbidden');
    expectError(await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?bogus=1`, { key }), 403, 'forbidden');
    expectError(await api.call('POST', '/v1/serviceability', { key: allBut.get('serviceability:read')!, json: { nonsense: true } }), 403, 'forbidden');
  });
});
