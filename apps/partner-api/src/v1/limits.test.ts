import { LIMITS } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { type TestResponse } from '../testing/harness';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { useScene } from '../testing/scene';

/** Spec Limits table, for the fields of the endpoints implemented so far. */
describe('limits: the maximum is accepted, one past it is 400 invalid_request too_long', () => {
  const scene = useScene({ key: true });
  const { api, tenant, connection } = scene;

  it('the limits are the spec’s numbers', () => {
    expect(LIMITS).toMatchObject({ region: 80, collection: 40, externalSubjectId: 190 });
  });

  function expectTooLong(response: TestResponse, field: string) {
    const error = expectError(response, 400, 'invalid_request');
    expect(error.details).toContainEqual(expect.objectContaining({ field, issue: 'too_long' }));
  }

  const requirements = (region: string) => api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?region=${encodeURIComponent(region)}`, { key: scene.key });
  const serviceability = (extra: Record<string, string>) =>
    api.call('POST', '/v1/serviceability', { key: scene.key, json: { program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, ...extra } });
  const subject = (id: string) => api.call('PUT', `/v1/subjects/${encodeURIComponent(id)}`, { key: scene.key });

  it('requirements query region: 80 accepted', async () => {
    expectSuccess(await requirements('R'.repeat(80)));
  });
  it('requirements query region: 81 → too_long on region', async () => {
    expectTooLong(await requirements('R'.repeat(81)), 'region');
  });
  it('requirements query region counts characters, not URL-encoded bytes: 80 × "é" accepted, 81 refused', async () => {
    expectSuccess(await requirements('é'.repeat(80)));
    expectTooLong(await requirements('é'.repeat(81)), 'region');
  });

  it('serviceability body region: 80 accepted', async () => {
    expect(expectSuccess(await serviceability({ region: 'R'.repeat(80) })).reasons).toEqual(['region_not_served']);
  });
  it('serviceability body region: 81 → too_long on region', async () => {
    expectTooLong(await serviceability({ region: 'R'.repeat(81) }), 'region');
  });
  it('serviceability body collection: 40 accepted', async () => {
    expect(expectSuccess(await serviceability({ collection: 'c'.repeat(40) })).reasons).toEqual(['collection_method_not_supported']);
  });
  it('serviceability body collection: 41 → too_long on collection', async () => {
    expectTooLong(await serviceability({ collection: 'c'.repeat(41) }), 'collection');
  });

  it('PUT subjects externalSubjectId: 190 accepted', async () => {
    const id = `limit-${'s'.repeat(184)}`;
    expect(id).toHaveLength(190);
    expect(expectSuccess(await subject(id)).external_subject_id).toBe(id);
  });
  it('PUT subjects externalSubjectId: 191 → too_long on externalSubjectId', async () => {
    expectTooLong(await subject('s'.repeat(191)), 'externalSubjectId');
  });
  it('PUT subjects externalSubjectId is measured after URL-decoding: 190 characters needing encoding are accepted as sent', async () => {
    // 570 characters on the wire, 190 in the identifier.
    const id = `${'é/ '.repeat(63)}x`;
    expect(id).toHaveLength(190);
    const response = await subject(id);
    expect(expectSuccess(response)).toEqual({ external_subject_id: id, linked: true });
    const rows = await connection.sql`select 1 from subjects where client_id = ${tenant.clientId} and external_subject_id = ${id}`;
    expect(rows).toHaveLength(1);
  });
  it('PUT subjects externalSubjectId: 191 decoded characters → too_long', async () => {
    expectTooLong(await subject(`${'é/ '.repeat(63)}xy`), 'externalSubjectId');
  });
});
