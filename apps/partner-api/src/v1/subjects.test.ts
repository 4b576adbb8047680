import { describe, expect, it } from 'vitest';
import { unique } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { useScene } from '../testing/scene';

describe('PUT /v1/subjects/{externalSubjectId} takes an opaque reference and nothing personal', () => {
  const scene = useScene({ key: { scopes: ['subjects:write'] } });
  const { api, tenant, connection, fixtures: f } = scene;

  const stored = async (externalSubjectId: string, clientId = tenant.clientId) =>
    connection.sql<{ environment: string }[]>`select environment from subjects where client_id = ${clientId} and external_subject_id = ${externalSubjectId}`;

  const personal: [string, unknown][] = [
    ['legal_first_name', 'Ada'],
    ['legal_last_name', 'Lovelace'],
    ['name', 'Ada Lovelace'],
    ['date_of_birth', '1815-12-10'],
    ['sex_at_birth', 'female'],
    ['email', 'ada@example.test'],
    ['phone', '+1-555-0100'],
    ['address_line1', '12 St James Square'],
    ['postal_code', 'SW1Y 4JH'],
    ['patient', { legal_first_name: 'Ada' }],
    ['clinical_notes', 'history of anaemia'],
  ];

  it.each(personal)('refuses a body with %s: 400 unknown_field naming it, nothing stored', async (field, value) => {
    const id = unique('subject-refused');
    const error = expectError(await api.call('PUT', `/v1/subjects/${id}`, { key: scene.key, json: { [field]: value } }), 400, 'invalid_request');
    expect(error.details).toEqual([expect.objectContaining({ field, issue: 'unknown_field' })]);
    expect(await stored(id)).toHaveLength(0);
  });

  it('the refusal does not echo the personal value', async () => {
    const response = await api.call('PUT', `/v1/subjects/${unique('subject-refused')}`, { key: scene.key, json: { legal_first_name: 'Augusta', date_of_birth: '1815-12-10' } });
    expectError(response, 400, 'invalid_request');
    expect(response.text).not.toContain('Augusta');
    expect(response.text).not.toContain('1815-12-10');
  });

  it('a body that is not an object is refused and nothing is stored', async () => {
    for (const json of [['Ada'], 'Ada Lovelace', 42]) {
      const id = unique('subject-refused');
      const response = await api.call('PUT', `/v1/subjects/${id}`, { key: scene.key, json });
      expect(response.status, JSON.stringify(json)).toBe(400);
      expect(await stored(id)).toHaveLength(0);
    }
  });

  it('works with no body at all', async () => {
    const id = unique('subject-nobody');
    expect(expectSuccess(await api.call('PUT', `/v1/subjects/${id}`, { key: scene.key }))).toEqual({ external_subject_id: id, linked: true });
    expect(await stored(id)).toEqual([{ environment: 'sandbox' }]);
  });

  it('works with an empty JSON object', async () => {
    const id = unique('subject-empty');
    expect(expectSuccess(await api.call('PUT', `/v1/subjects/${id}`, { key: scene.key, json: {} }))).toEqual({ external_subject_id: id, linked: true });
    expect(await stored(id)).toHaveLength(1);
  });

  it('repeating the call is idempotent: same answer, one row', async () => {
    const id = unique('subject-repeat');
    const first = expectSuccess(await api.call('PUT', `/v1/subjects/${id}`, { key: scene.key }));
    const second = expectSuccess(await api.call('PUT', `/v1/subjects/${id}`, { key: scene.key, json: {} }));
    expect(second).toEqual(first);
    expect(await stored(id)).toHaveLength(1);
  });

  it('a subject is registered per client and environment', async () => {
    const id = unique('subject-shared');
    const production = await tenant.key({ environment: 'production', scopes: ['subjects:write'] });
    const otherClient = await f.client(tenant.laboratory.id);
    const otherKey = await f.key(otherClient.client_id, 'sandbox', { scopes: ['subjects:write'] });
    expectSuccess(await api.call('PUT', `/v1/subjects/${id}`, { key: scene.key }));
    expectSuccess(await api.call('PUT', `/v1/subjects/${id}`, { key: production }));
    expectSuccess(await api.call('PUT', `/v1/subjects/${id}`, { key: otherKey }));
    expect((await stored(id)).map((r) => r.environment).sort()).toEqual(['production', 'sandbox']);
    expect(await stored(id, otherClient.client_id)).toHaveLength(1);
  });

  it('the identifier is stored exactly as the partner wrote it (URL-decoded once)', async () => {
    for (const id of [`${unique('pat')} 42`, `${unique('a')}/b`, `${unique('ü')}-ß`, `${unique('pct')}%41`]) {
      const response = await api.call('PUT', `/v1/subjects/${encodeURIComponent(id)}`, { key: scene.key });
      expect(expectSuccess(response).external_subject_id).toBe(id);
      expect(await stored(id)).toHaveLength(1);
    }
  });

  it('an empty identifier is not a subject route', async () => {
    expect((await api.call('PUT', '/v1/subjects/', { key: scene.key })).status).toBe(404);
  });
});
