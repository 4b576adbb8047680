import { SCOPES } from '@lop/contract';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { useScene } from '../testing/scene';

describe('authentication: every failure is 401 unauthorized in the error envelope', () => {
  const scene = useScene({ partner: 'tenant' });
  const { api, tenant, connection, fixtures: f } = scene;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    keys.valid = await tenant.key();
    keys.revoked = await tenant.key({ revoked: true });
    keys.expired = await tenant.key({ expired: true });
    keys.production = await tenant.key({ environment: 'production' });
    keys.eventsOnly = await tenant.key({ scopes: ['events:read'] });
    keys.noScopes = await tenant.key({ scopes: [] });
    keys.expiresLater = await tenant.key({ expiresAt: new Date(Date.now() + 3_600_000) });
    const disabledClient = await f.client(tenant.laboratory.id);
    keys.disabledClient = await f.key(disabledClient.client_id, 'sandbox');
    await f.disableClient(disabledClient.client_id);
  });

  const unknownKey = `lop_test_${'A'.repeat(40)}`;
  const cases: { rule: string; headers: () => Record<string, string> }[] = [
    { rule: 'no Authorization header', headers: () => ({}) },
    { rule: 'an empty Authorization header', headers: () => ({ authorization: '' }) },
    { rule: 'not the Bearer scheme', headers: () => ({ authorization: `Basic ${Buffer.from(`${keys.valid}:`).toString('base64')}` }) },
    { rule: 'the key without a scheme', headers: () => ({ authorization: keys.valid }) },
    { rule: 'Bearer with nothing after it', headers: () => ({ authorization: 'Bearer ' }) },
    { rule: 'Bearer with two tokens', headers: () => ({ authorization: `Bearer ${keys.valid} ${keys.valid}` }) },
    { rule: 'garbage text as key', headers: () => ({ authorization: 'Bearer not-a-key-at-all' }) },
    { rule: 'a key-shaped but unknown key', headers: () => ({ authorization: `Bearer ${unknownKey}` }) },
    { rule: 'a valid key with one character changed', headers: () => ({ authorization: `Bearer ${keys.valid.slice(0, -1)}${keys.valid.endsWith('a') ? 'b' : 'a'}` }) },
    { rule: 'a sandbox key presented with the production prefix', headers: () => ({ authorization: `Bearer ${keys.valid.replace('lop_test_', 'lop_live_')}` }) },
    { rule: 'a revoked key', headers: () => ({ authorization: `Bearer ${keys.revoked}` }) },
    { rule: 'an expired key', headers: () => ({ authorization: `Bearer ${keys.expired}` }) },
    { rule: 'a key of a disabled API client', headers: () => ({ authorization: `Bearer ${keys.disabledClient}` }) },
  ];

  it.each(cases)('401 for $rule', async ({ headers }) => {
    const response = await api.call('GET', '/v1/health', { headers: headers() });
    const error = expectError(response, 401, 'unauthorized');
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer /);
    // The answer never echoes the presented key.
    expect(response.text).not.toContain(keys.valid);
    expect(error.message).not.toMatch(/lop_(test|live)_[0-9A-Za-z]{8,}/);
  });

  it('401 comes before the scope check and input validation on every endpoint', async () => {
    for (const [method, path] of [
      ['GET', '/v1/lab'],
      ['GET', '/v1/locations'],
      ['GET', '/v1/programs'],
      ['GET', '/v1/programs/not-a-uuid'],
      ['GET', `/v1/programs/${tenant.sandbox.program.id}/catalog`],
      ['GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?unknown=1`],
      ['POST', '/v1/serviceability'],
      ['PUT', '/v1/subjects/s-1'],
    ] as const) {
      expectError(await api.call(method, path, { key: keys.revoked }), 401, 'unauthorized');
    }
  });

  it('revocation takes effect on the next request', async () => {
    const key = await tenant.key();
    expectSuccess(await api.call('GET', '/v1/health', { key }));
    const [row] = await connection.sql<{ id: string }[]>`select id from api_keys where client_id = ${tenant.clientId} order by created_at desc limit 1`;
    await connection.sql`update api_keys set revoked_at = now() where id = ${row.id}`;
    expectError(await api.call('GET', '/v1/health', { key }), 401, 'unauthorized');
  });

  it.each([
    ['a key with only events:read', 'eventsOnly'],
    ['a key with no scopes at all', 'noScopes'],
    ['a key with every scope', 'valid'],
    ['a key that expires later', 'expiresLater'],
  ])('health answers 200 to %s (a valid, active key is all it needs)', async (_rule, name) => {
    const data = expectSuccess(await api.call('GET', '/v1/health', { key: keys[name] }));
    expect(data.environment).toBe('sandbox');
  });

  it('health reports the environment of the key', async () => {
    const data = expectSuccess(await api.call('GET', '/v1/health', { key: keys.production }));
    expect(data.environment).toBe('production');
    expect(keys.production).toMatch(/^lop_live_/);
    expect(keys.valid).toMatch(/^lop_test_/);
  });

  it('the bearer scheme name is case-insensitive (RFC 7235)', async () => {
    expectSuccess(await api.call('GET', '/v1/health', { headers: { authorization: `bearer ${keys.valid}` } }));
  });

  it('every scope the spec names can be held by a key', () => {
    expect(SCOPES).toEqual([
      'catalog:read',
      'serviceability:read',
      'programs:read',
      'subjects:write',
      'orders:write',
      'orders:read',
      'orders:cancel',
      'results:read',
      'events:read',
    ]);
  });
});
