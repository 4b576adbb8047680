import { randomUUID } from 'node:crypto';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../testing/expect-envelope';
import { type RequestOptions, type TestResponse } from '../testing/harness';
import { orderBody, ordersClient } from '../testing/orders';
import { useScene } from '../testing/scene';
import { unique } from '@lop/testing';
import { partnerCallMatcher } from './partner-dispatcher';

/**
 * The dispatcher (partner-dispatcher.ts) takes partner calls in front of express; express and
 * trpc-to-openapi (partner-rest.ts) answer everything else. Express mounts the facade
 * case-insensitively, so `/API/public/partner/...` is the same call taken the other way: every
 * answer must be the same, byte for byte, apart from the request id and the clock.
 */
const OTHER_WAY = PARTNER_BASE_PATH.replace('/api/', '/API/');
const match = partnerCallMatcher(PARTNER_BASE_PATH);

const scene = useScene({ rateLimit: false, client: true });
const { api, tenant } = scene;
let orderId: string;
let replayKey: string;
let replayBody: ReturnType<typeof orderBody>;

beforeAll(async () => {
  replayKey = unique('idem');
  replayBody = orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject);
  const created = await scene.client.create(replayBody, { idempotencyKey: replayKey });
  expect(created.status, created.text).toBe(201);
  orderId = created.body.data.order_id;
});

/** What differs between two identical calls: the clock, the request id, the rate-limit window's count. */
const VARYING = new Set(['date', 'x-request-id', 'ratelimit-remaining', 'ratelimit-reset']);

function comparable(response: TestResponse) {
  const headers = Object.fromEntries([...response.headers.entries()].filter(([name]) => !VARYING.has(name)));
  const text = response.text
    .replace(/"req_[0-9a-f]+"/g, '"req_…"')
    .replace(/"server_time":"[^"]+"/, '"server_time":"…"')
    // Sandbox fixtures carry a fresh external_order_id on every read.
    .replace(/"sandbox-([a-z]+)-[0-9a-f]+"/g, '"sandbox-$1-…"');
  return { status: response.status, headers, text };
}

/** `taken`: whether the dispatcher takes the call (those it leaves go to express both ways). */
async function bothWays(method: string, path: string, options: RequestOptions = {}, taken = true) {
  expect(match(method, PARTNER_BASE_PATH + path) !== null, `the dispatcher takes ${method} ${path}: ${taken}`).toBe(taken);
  expect(match(method, OTHER_WAY + path), `express takes ${method} ${OTHER_WAY}${path}`).toBeNull();
  const dispatched = await api.fetch(method, PARTNER_BASE_PATH + path, options);
  const throughExpress = await api.fetch(method, OTHER_WAY + path, options);
  expect(comparable(dispatched)).toEqual(comparable(throughExpress));
  return dispatched;
}

describe('partner calls answer the same through the dispatcher and through express', () => {
  const json = { 'content-type': 'application/json' };

  it('reads: success, 404 for unknown and malformed ids, 400 for undecodable escapes', async () => {
    expect((await bothWays('GET', `/v1/orders/${orderId}`, { key: scene.key })).status).toBe(200);
    expect((await bothWays('GET', `/v1/orders/${randomUUID()}`, { key: scene.key })).status).toBe(404);
    expect((await bothWays('GET', '/v1/orders/not-a-uuid', { key: scene.key })).status).toBe(404);
    expect((await bothWays('GET', '/v1/orders/%ff', { key: scene.key })).status).toBe(400);
    expect((await bothWays('GET', `/v1/orders/${orderId}/results`, { key: scene.key })).status).toBe(200);
    expect((await bothWays('GET', `/v1/orders/${orderId}/exceptions`, { key: scene.key })).status).toBe(200);
    for (const path of ['/v1/health', '/v1/lab', '/v1/programs', `/v1/programs/${tenant.sandbox.program.id}`, `/v1/programs/${tenant.sandbox.program.id}/catalog`, '/v1/sandbox/scenarios', '/v1/sandbox/order-fixtures']) {
      expect((await bothWays('GET', path, { key: scene.key })).status, path).toBe(200);
    }
    await bothWays('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?region=${tenant.region}`, { key: scene.key });
    await bothWays('GET', `/v1/locations?region=${tenant.region}`, { key: scene.key });
    await bothWays('POST', '/v1/serviceability', { key: scene.key, json: { program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, region: tenant.region } });
  });

  it('the FHIR view: the raw Bundle with its media type, and the envelope for its refusals', async () => {
    const orders = ordersClient(api, scene.key);
    const fhirOrder = (await orders.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject))).body.data.order_id;
    expect((await api.call('POST', `/v1/sandbox/orders/${fhirOrder}/simulate`, { key: scene.key, json: { scenario: 'partial_then_final' } })).status).toBe(200);
    const { results } = (await api.call('GET', `/v1/orders/${fhirOrder}/results`, { key: scene.key })).body.data;
    for (const { result_id } of results) {
      const bundle = await bothWays('GET', `/v1/orders/${fhirOrder}/results/${result_id}/fhir`, { key: scene.key });
      expect(bundle.status).toBe(200);
      expect(bundle.headers.get('content-type')).toBe('application/fhir+json; fhirVersion=4.0');
      expect(bundle.body.resourceType).toBe('Bundle');
    }
    expect((await bothWays('GET', `/v1/orders/${fhirOrder}/results/${randomUUID()}/fhir`, { key: scene.key })).status).toBe(404);
    expect((await bothWays('GET', `/v1/orders/${fhirOrder}/results/not-a-uuid/fhir`, { key: scene.key })).status).toBe(404);
    expect((await bothWays('GET', `/v1/orders/${fhirOrder}/results/${results[0].result_id}/fhir`)).status).toBe(401);
    expect((await bothWays('GET', `/v1/orders/${fhirOrder}/results/${results[0].result_id}/fhir?x=1`, { key: scene.key })).status).toBe(400);
  });

  it('authentication and scope: 401 with WWW-Authenticate, 403', async () => {
    expect((await bothWays('GET', `/v1/orders/${orderId}`)).status).toBe(401);
    expect((await bothWays('GET', `/v1/orders/${orderId}`, { key: 'lop_test_nope' })).status).toBe(401);
    const eventsOnly = await tenant.key({ scopes: ['events:read'] });
    expect((await bothWays('GET', `/v1/orders/${orderId}`, { key: eventsOnly })).status).toBe(403);
  });

  it('query strings: paging, repeated, empty, malformed and unknown parameters', async () => {
    const page = await bothWays('GET', '/v1/events?limit=1', { key: scene.key });
    expect(page.status).toBe(200);
    await bothWays('GET', `/v1/events?limit=1&cursor=${page.body.data.next_cursor}`, { key: scene.key });
    for (const query of ['?limit=', '?limit=0x10', '?cursor=zzz', '?limit=1&limit=2', '?unknown=1', '?limit=%ff', '?limit=+5']) {
      expect((await bothWays('GET', `/v1/events${query}`, { key: scene.key })).status, query).toBe(400);
    }
  });

  it('bodies: a replayed create, and every way a create is refused before it writes', async () => {
    const replay = await bothWays('POST', '/v1/orders', { key: scene.key, json: replayBody, headers: { 'idempotency-key': replayKey } });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const fresh = orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject);
    expect((await bothWays('POST', '/v1/orders?x=1', { key: scene.key, json: fresh, headers: { 'idempotency-key': unique('idem') } })).status).toBe(400);
    expect((await bothWays('POST', '/v1/orders', { key: scene.key, rawBody: 'hello', headers: { 'content-type': 'text/plain', 'idempotency-key': unique('idem') } })).status).toBe(415);
    expect((await bothWays('POST', '/v1/orders', { key: scene.key, rawBody: '{"oops"', headers: { ...json, 'idempotency-key': unique('idem') } })).status).toBe(400);
    expect((await bothWays('POST', '/v1/orders', { key: scene.key, json: fresh })).status).toBe(400);
    expect((await bothWays('POST', '/v1/orders', { key: scene.key, json: { ...fresh, surprise: true }, headers: { 'idempotency-key': unique('idem') } })).status).toBe(400);
    expect((await bothWays('POST', '/v1/orders', { key: scene.key, rawBody: JSON.stringify({ pad: 'x'.repeat(200_000) }), headers: { ...json, 'idempotency-key': unique('idem') } })).status).toBe(413);
    expect((await bothWays('PUT', `/v1/subjects/${scene.subject}`, { key: scene.key })).status).toBe(200);
    expect((await bothWays('POST', `/v1/orders/${randomUUID()}/cancel`, { key: scene.key })).status).toBe(404);
    expect((await bothWays('POST', `/v1/sandbox/orders/${randomUUID()}/simulate`, { key: scene.key, json: { scenario: 'happy_path' } })).status).toBe(404);
  });

  it('leaves to express what it cannot read exactly as the libraries do', () => {
    for (const target of ['/v1/orders/a\\b', '/v1/./orders', '/v1/orders/%2e%2e', '/v1/orders/x#y', '/v1/orders/<x>', '/v1/orders/x?a=<b>']) {
      expect(match('GET', PARTNER_BASE_PATH + target), target).toBeNull();
    }
    expect(match('GET', `${PARTNER_BASE_PATH}/v1/nothing-here`)).toBeNull();
    expect(match('GET', `${PARTNER_BASE_PATH}/v1/orders/${randomUUID()}`)).not.toBeNull();
  });
});

describe('methods, as RFC 9110 has them, the same through the dispatcher and through express', () => {
  it('HEAD wherever GET works (§9.1): the GET\'s status and headers, no body', async () => {
    for (const path of ['/v1/health', `/v1/orders/${orderId}`, `/v1/orders/${orderId}/results`, '/v1/events?limit=1', `/v1/programs/${tenant.sandbox.program.id}`]) {
      const head = await bothWays('HEAD', path, { key: scene.key });
      const get = await api.call('GET', path, { key: scene.key });
      expect(head.status, path).toBe(200);
      expect(head.text).toBe('');
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    }
    expect((await bothWays('HEAD', `/v1/orders/${randomUUID()}`, { key: scene.key })).status).toBe(404);
    expect((await bothWays('HEAD', '/v1/events?limit=', { key: scene.key })).status).toBe(400);
    const unauthenticated = await bothWays('HEAD', '/v1/health');
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(unauthenticated.text).toBe('');
  });

  it('a method the route does not answer: 405 method_not_allowed with Allow (§15.5.6), before its body or key is read', async () => {
    const cases = [
      ['PUT', '/v1/health', 'GET, HEAD'],
      ['DELETE', `/v1/orders/${orderId}`, 'GET, HEAD'],
      ['POST', '/v1/events', 'GET, HEAD'],
      ['GET', '/v1/orders', 'POST'],
      ['HEAD', `/v1/orders/${orderId}/cancel`, 'POST'],
      ['PATCH', `/v1/subjects/${scene.subject}`, 'PUT'],
      ['OPTIONS', '/v1/serviceability', 'POST'],
    ];
    for (const [method, path, allow] of cases) {
      const body = method === 'GET' || method === 'HEAD' ? {} : { rawBody: '{"oops"', headers: { 'content-type': 'application/json' } };
      const response = await bothWays(method, path, body, false);
      expect(response.headers.get('allow'), `${method} ${path}`).toBe(allow);
      if (method === 'HEAD') expect(response.status).toBe(405);
      else expect(expectError(response, 405, 'method_not_allowed').message).toContain(method);
    }
    // No route at all is still 404.
    expectError(await bothWays('DELETE', '/v1/nothing-here', {}, false), 404, 'not_found');
  });
});
