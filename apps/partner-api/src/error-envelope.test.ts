import { describe, expect, it } from 'vitest';
import { expectError } from './testing/expect-envelope';
import { useScene } from './testing/scene';

describe('every failure path answers the one error envelope', () => {
  const scene = useScene({ key: true });
  const { api, tenant, connection } = scene;

  describe('unknown routes: 404 not_found', () => {
    it.each([
      ['GET', '/api/public/partner/v1/nothing-here'],
      ['POST', '/api/public/partner/v1/nothing-here'],
      ['GET', '/api/public/partner/v2/health'],
      ['GET', '/api/public/partner'],
      ['GET', '/'],
      ['GET', '/v1/health'],
      ['POST', '/api/public/partner-openapi'],
    ])('%s %s', async (method, path) => {
      const response = await api.fetch(method, path, { key: scene.key, json: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expectError(response, 404, 'not_found');
    });

    // A route that exists but does not answer the method (RFC 9110 §15.5.6).
    it.each([
      ['POST', '/api/public/partner/v1/health', 'GET, HEAD'],
      ['DELETE', '/api/public/partner/v1/programs', 'GET, HEAD'],
      ['PATCH', '/api/public/partner/v1/subjects/s-1', 'PUT'],
    ])('%s %s: 405 method_not_allowed, Allow: %s', async (method, path, allow) => {
      const response = await api.fetch(method, path, { key: scene.key, json: method === 'DELETE' ? undefined : {} });
      expectError(response, 405, 'method_not_allowed');
      expect(response.headers.get('allow')).toBe(allow);
    });

    it('an unknown route without a key is still 404 in the envelope', async () => {
      expectError(await api.fetch('GET', '/api/public/partner/v1/nothing-here'), 404, 'not_found');
    });
  });

  it('malformed JSON: 400 invalid_request, issue malformed_json', async () => {
    const response = await api.call('POST', '/v1/serviceability', { key: scene.key, rawBody: '{"program_id": ', headers: { 'content-type': 'application/json' } });
    const error = expectError(response, 400, 'invalid_request');
    expect(error.details).toEqual([{ issue: 'malformed_json' }]);
  });

  it('malformed JSON on PUT: 400 invalid_request', async () => {
    const response = await api.call('PUT', '/v1/subjects/s-1', { key: scene.key, rawBody: '{oops}', headers: { 'content-type': 'application/json' } });
    expectError(response, 400, 'invalid_request');
  });

  it('a JSON body that is not an object is 400 invalid_request', async () => {
    const response = await api.call('POST', '/v1/serviceability', { key: scene.key, rawBody: '"just a string"', headers: { 'content-type': 'application/json' } });
    expectError(response, 400, 'invalid_request');
  });

  it('wrong content type (text/plain body): 415 unsupported_media_type', async () => {
    const response = await api.call('POST', '/v1/serviceability', { key: scene.key, rawBody: 'program_id=1', headers: { 'content-type': 'text/plain' } });
    expectError(response, 415, 'unsupported_media_type');
  });

  it('wrong content type on PUT subjects: 415 unsupported_media_type, nothing stored', async () => {
    const response = await api.call('PUT', '/v1/subjects/content-type-subject', { key: scene.key, rawBody: 'name=Ada', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectError(response, 415, 'unsupported_media_type');
    expect(await connection.sql`select 1 from subjects where external_subject_id = 'content-type-subject'`).toHaveLength(0);
  });

  it('oversized body (> 100 KB): 413 payload_too_large', async () => {
    const json = { program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, region: 'x'.repeat(101 * 1024) };
    expectError(await api.call('POST', '/v1/serviceability', { key: scene.key, json }), 413, 'payload_too_large');
  });

  it('a body just under 100 KB is read (and judged on its fields)', async () => {
    const json = { program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, region: 'x'.repeat(99 * 1024) };
    const error = expectError(await api.call('POST', '/v1/serviceability', { key: scene.key, json }), 400, 'invalid_request');
    expect(error.details).toContainEqual(expect.objectContaining({ field: 'region', issue: 'too_long' }));
  });

  it.each([
    ['/v1/health?verbose=1', 'verbose'],
    ['/v1/lab?fields=all', 'fields'],
    ['/v1/locations?region=US-CA', 'region'],
    ['/v1/programs?limit=10', 'limit'],
  ])('unknown query parameter %s: 400 invalid_request naming it', async (path, field) => {
    const error = expectError(await api.call('GET', path, { key: scene.key }), 400, 'invalid_request');
    expect(error.details).toContainEqual(expect.objectContaining({ field, issue: 'unknown_field' }));
  });

  it('unknown query parameter on a program route: 400 naming it', async () => {
    const error = expectError(await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/catalog?page=2`, { key: scene.key }), 400, 'invalid_request');
    expect(error.details).toContainEqual(expect.objectContaining({ field: 'page', issue: 'unknown_field' }));
  });

  it('a query parameter on a body endpoint (POST serviceability) is 400 naming it, not silently ignored', async () => {
    const json = { program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id };
    const error = expectError(await api.call('POST', '/v1/serviceability?region=US-CA', { key: scene.key, json }), 400, 'invalid_request');
    expect(error.details).toEqual([expect.objectContaining({ field: 'region', issue: 'unknown_field' })]);
  });

  it('a query parameter on PUT subjects (e.g. a name) is 400 and nothing is stored', async () => {
    const error = expectError(await api.call('PUT', '/v1/subjects/query-subject?name=Ada', { key: scene.key }), 400, 'invalid_request');
    expect(error.details).toEqual([expect.objectContaining({ field: 'name', issue: 'unknown_field' })]);
    expect(await connection.sql`select 1 from subjects where external_subject_id = 'query-subject'`).toHaveLength(0);
  });

  it('a query string on an unknown POST route is still 404', async () => {
    expectError(await api.call('POST', '/v1/nothing-here?x=1', { key: scene.key, json: {} }), 404, 'not_found');
  });

  it('a repeated query parameter is 400, not a crash', async () => {
    expectError(await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?region=US-CA&region=US-NY`, { key: scene.key }), 400, 'invalid_request');
  });

  it('ill-typed body fields: 400 naming each field', async () => {
    const error = expectError(await api.call('POST', '/v1/serviceability', { key: scene.key, json: { program_id: 42, item_id: 'nope', region: ['US-CA'] } }), 400, 'invalid_request');
    expect(error.details!.map((d) => d.field).sort()).toEqual(['item_id', 'program_id', 'region']);
  });
});
