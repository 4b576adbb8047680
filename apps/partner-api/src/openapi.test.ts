import { EVENT_TYPES, OPENAPI_PATH, PARTNER_BASE_PATH } from '@lop/contract';
import { validate } from '@readme/openapi-parser';
import { forEachOpenApiProcedure } from 'trpc-to-openapi';
import { beforeAll, describe, expect, it } from 'vitest';
import { partnerRouter, type ProcedureMeta } from '@lop/domain';
import { startTestApi, type TestResponse } from './testing/harness';
import { useScene } from './testing/scene';

/** Every implemented route as `METHOD /v1/...`, read from the router itself. */
function implementedRoutes(): { method: string; path: string; scope?: string }[] {
  const routes: { method: string; path: string; scope?: string }[] = [];
  forEachOpenApiProcedure(partnerRouter._def.procedures, ({ meta }) => {
    const m = meta as ProcedureMeta;
    routes.push({ method: m.openapi!.method.toLowerCase(), path: m.openapi!.path, scope: m.scope });
  });
  return routes;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

function operations(document: any): { path: string; method: string; operation: any }[] {
  return Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, operation]) => ({ path, method, operation })),
  );
}

describe(`GET ${OPENAPI_PATH}`, () => {
  const { api, tenant, fixtures: f } = useScene({ partner: 'tenant' });
  let demo: Awaited<ReturnType<typeof f.demo>>;
  const secrets: string[] = [];
  let response: TestResponse;
  let document: any;

  beforeAll(async () => {
    demo = await f.demo();
    secrets.push(await tenant.key(), await tenant.key({ environment: 'production' }), demo.key);
    response = await api.fetch('GET', OPENAPI_PATH);
    document = response.body;
  });

  it('answers 200 JSON without any key, cacheable for five minutes even with no base URL configured', () => {
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('ignores a presented key and query parameters (it takes none)', async () => {
    const again = await api.fetch('GET', `${OPENAPI_PATH}?format=yaml`, { key: secrets[0] });
    expect(again.status).toBe(200);
    expect(again.text).toBe(response.text);
  });

  it('is OpenAPI 3.1 with info.version v1', () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.info.version).toBe('v1');
    expect(document.info.title).toEqual(expect.any(String));
  });

  it('is a valid OpenAPI document (@readme/openapi-parser)', async () => {
    const result = await validate(structuredClone(document));
    expect(result.valid, JSON.stringify(result)).toBe(true);
  });

  it('holds no key text and no tenant identifiers', () => {
    for (const secret of secrets) expect(response.text).not.toContain(secret);
    expect(response.text).not.toMatch(/lop_(test|live)_[0-9A-Za-z]/);
    const tenantIds = [
      demo.laboratory_id,
      demo.client_id,
      ...demo.programs.map((p) => p.program_id),
      tenant.laboratory.id,
      tenant.clientId,
      tenant.sandbox.program.id,
      tenant.sandbox.item.id,
    ];
    for (const id of tenantIds) expect(response.text).not.toContain(id);
    expect(response.text).not.toContain('Northwind');
    expect(response.text).not.toContain(tenant.laboratory.displayName);
  });

  it('lists no server when no base URL is configured, and never one taken from the request’s Host header', async () => {
    expect(document).not.toHaveProperty('servers');
    const { request } = await import('node:http');
    for (const host of ['evil.example', 'evil.example:8443', 'evil.example/"><script>']) {
      const { body, cacheControl } = await new Promise<{ body: string; cacheControl: string | undefined }>((resolve, reject) => {
        const req = request(`${api.url}${OPENAPI_PATH}`, { headers: { host, 'x-forwarded-host': host, 'x-forwarded-proto': 'https' } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c)).on('end', () => resolve({ body: text, cacheControl: res.headers['cache-control'] }));
        });
        req.on('error', reject).end();
      });
      expect(body).toBe(response.text);
      expect(body).not.toContain('evil.example');
      expect(cacheControl).toBe('public, max-age=300');
    }
  });

  it('documents every event type’s webhook delivery (headers and body) in the OpenAPI 3.1 webhooks section', () => {
    expect(Object.keys(document.webhooks)).toEqual([...EVENT_TYPES]);
    const delivery = document.webhooks['result.final'].post;
    expect(delivery.parameters.map((p: any) => p.name)).toEqual(expect.arrayContaining(['x-partner-signature', 'x-partner-timestamp', 'x-partner-event-id', 'x-partner-delivery-id']));
    expect(delivery.requestBody.content['application/json'].example).toMatchObject({ type: 'result.final' });
    expect(document.tags.map((t: any) => t.name)).toContain('Webhooks');
  });

  it('documents every implemented route under the base path', () => {
    const routes = implementedRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(9);
    for (const route of routes) {
      const item = document.paths[`${PARTNER_BASE_PATH}${route.path}`];
      expect(item, `${route.method} ${PARTNER_BASE_PATH}${route.path} missing`).toBeDefined();
      expect(item[route.method], `${route.method} ${route.path}`).toBeDefined();
    }
    expect(operations(document)).toHaveLength(routes.length);
  });

  it('every documented operation is a live route at its documented address', async () => {
    const key = secrets[0];
    for (const { path, method } of operations(document)) {
      const concrete = path.replace('{programId}', tenant.sandbox.program.id).replace('{externalSubjectId}', 'openapi-route-check');
      const live = await api.fetch(method.toUpperCase(), concrete, { key, json: method === 'get' ? undefined : {} });
      expect(live.body?.error?.message === 'No such route.', `${method} ${path} is not routed`).toBe(false);
      expect(live.status, `${method} ${path}`).toBeLessThan(500);
    }
  });

  it('every error response references the ErrorEnvelope schema', () => {
    expect(document.components.schemas.ErrorEnvelope).toBeDefined();
    let errorResponses = 0;
    for (const { path, method, operation } of operations(document)) {
      for (const [status, answer] of Object.entries(operation.responses as Record<string, any>)) {
        if (Number(status) < 400) continue;
        errorResponses++;
        expect(answer.content?.['application/json']?.schema, `${method} ${path} ${status}`).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
      }
    }
    expect(errorResponses).toBeGreaterThan(0);
  });

  it('documents 401 on every operation, 403 where a scope is needed, and the required scope', () => {
    const scopes = new Map(implementedRoutes().map((r) => [`${r.method} ${PARTNER_BASE_PATH}${r.path}`, r.scope]));
    for (const { path, method, operation } of operations(document)) {
      expect(operation.responses, `${method} ${path}`).toHaveProperty('401');
      const scope = scopes.get(`${method} ${path}`);
      if (scope && scope !== 'none') {
        expect(operation.responses, `${method} ${path}`).toHaveProperty('403');
        expect(operation['x-required-scope'], `${method} ${path}`).toBe(scope);
      } else {
        expect(operation.responses, `${method} ${path}`).not.toHaveProperty('403');
      }
      expect(operation.security ?? document.security).toBeDefined();
    }
  });

  it('documents 404 on every route with a program id in its path', () => {
    for (const { path, method, operation } of operations(document)) {
      if (path.includes('{programId}')) expect(operation.responses, `${method} ${path}`).toHaveProperty('404');
    }
  });

  it('documents the spec limits on the fields it bounds', () => {
    const requirements = document.paths[`${PARTNER_BASE_PATH}/v1/programs/{programId}/requirements`].get;
    expect(requirements.parameters.find((p: any) => p.name === 'region').schema.maxLength).toBe(80);
    const subject = document.paths[`${PARTNER_BASE_PATH}/v1/subjects/{externalSubjectId}`].put;
    expect(subject.parameters.find((p: any) => p.name === 'externalSubjectId').schema.maxLength).toBe(190);
  });
});

describe('OpenAPI servers list the configured base URLs only', () => {
  let cacheControl: string | null = null;
  const servers = async (env: Record<string, string>) => {
    const api = await startTestApi(env);
    try {
      const response = await api.fetch('GET', OPENAPI_PATH);
      cacheControl = response.headers.get('cache-control');
      expect((await validate(structuredClone(response.body))).valid).toBe(true);
      return response.body;
    } finally {
      await api.close();
    }
  };

  it('both configured: a sandbox and a production server, each resolving the documented paths to {base_url}/v1/...', async () => {
    const document = await servers({
      PARTNER_SANDBOX_BASE_URL: 'https://sandbox.lab.example/api/public/partner',
      PARTNER_PRODUCTION_BASE_URL: 'https://api.lab.example/api/public/partner',
    });
    expect(document.servers).toEqual([
      { url: 'https://sandbox.lab.example', description: expect.stringMatching(/sandbox/i) },
      { url: 'https://api.lab.example', description: expect.stringMatching(/production/i) },
    ]);
    expect(`${document.servers[0].url}${PARTNER_BASE_PATH}/v1/health`).toBe('https://sandbox.lab.example/api/public/partner/v1/health');
    for (const path of Object.keys(document.paths)) expect(`${document.servers[1].url}${path}`).toMatch(/^https:\/\/api\.lab\.example\/api\/public\/partner\/v1\//);
  });

  it('only sandbox configured (as an origin): one server, sandbox', async () => {
    const document = await servers({ PARTNER_SANDBOX_BASE_URL: 'https://sandbox.lab.example' });
    expect(document.servers).toEqual([{ url: 'https://sandbox.lab.example', description: expect.stringMatching(/sandbox/i) }]);
    expect(cacheControl).toBe('public, max-age=300');
  });

  it('only production configured: one server, production', async () => {
    const document = await servers({ PARTNER_PRODUCTION_BASE_URL: 'https://api.lab.example/api/public/partner/' });
    expect(document.servers).toEqual([{ url: 'https://api.lab.example', description: expect.stringMatching(/production/i) }]);
  });
});
