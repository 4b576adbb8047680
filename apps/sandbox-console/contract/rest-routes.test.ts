// The console's tables checked against the server code they mirror (outside src/: the browser bundle imports only types from @lop/domain).
import { describe, expect, it } from 'vitest';
import { forEachOpenApiProcedure } from 'trpc-to-openapi';
import { partnerRouter } from '@lop/domain';
import { PARTNER_API_VERSION } from '@lop/contract';
import { inputFromRestPath, REST_ROUTES, restRequestFor, scopeOf } from '../src/inspector/rest-routes';

describe('the REST routes the request inspector shows', () => {
  it('are exactly the OpenAPI routes of the partner procedures (method, path, success status)', () => {
    const fromRouter: Record<string, unknown> = {};
    forEachOpenApiProcedure(partnerRouter._def.procedures, ({ path, meta }) => {
      const { successStatus, scope, responseContentType } = meta as { successStatus?: number; scope?: string; responseContentType?: string };
      fromRouter[path] = { method: meta.openapi.method, path: meta.openapi.path, successStatus: successStatus ?? 200, scope, ...(responseContentType ? { responseContentType } : {}) };
    });
    expect(REST_ROUTES).toEqual(fromRouter);
  });

  it('know the scope of every procedure, console-only ones included, as its metadata states it', () => {
    const procedures = partnerRouter._def.procedures as unknown as Record<string, { _def: { meta?: { scope?: string } } }>;
    const expected = Object.fromEntries(Object.entries(procedures).map(([path, p]) => [path, p._def.meta?.scope]));
    const known = Object.fromEntries(Object.keys(procedures).map((path) => [path, scopeOf(path)]));
    expect(known).toEqual(expected);
  });

  it('all sit under the API version', () => {
    for (const route of Object.values(REST_ROUTES)) expect(route.path.startsWith(`/${PARTNER_API_VERSION}/`)).toBe(true);
  });

  it('put path parameters in the path, the rest in the query of a GET or the body of a POST', () => {
    const origin = 'http://127.0.0.1:3000';
    expect(restRequestFor('events.list', { cursor: 'c_1', limit: 200 }, origin)).toMatchObject({
      method: 'GET',
      url: `${origin}/api/public/partner/v1/events?cursor=c_1&limit=200`,
      query: { cursor: 'c_1', limit: '200' },
      body: undefined,
    });
    const simulate = restRequestFor('sandbox.simulate', { orderId: 'o-1', scenario: 'happy_path', steps: 1 }, origin);
    expect(simulate).toMatchObject({
      method: 'POST',
      url: `${origin}/api/public/partner/v1/sandbox/orders/o-1/simulate`,
      pathTemplate: '/api/public/partner/v1/sandbox/orders/{orderId}/simulate',
      pathParams: { orderId: 'o-1' },
      body: { scenario: 'happy_path', steps: 1 },
      headers: { 'Content-Type': 'application/json' },
    });
    expect(restRequestFor('console.orders', {}, origin)).toBeNull();
  });

  it('read the input of a route back from a REST path, as a report retrieval_path names it', () => {
    expect(inputFromRestPath('results.reportDocument', '/v1/orders/o-1/results/r-2/report/document?retrieval_id=abc')).toEqual({
      orderId: 'o-1',
      resultId: 'r-2',
      retrieval_id: 'abc',
    });
    expect(inputFromRestPath('results.reportDocument', '/v1/orders/o-1/results')).toBeNull();
  });
});
