import { Parser } from '@asyncapi/parser';
import { ASYNCAPI_PATH, EVENT_TYPES, OPENAPI_PATH } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { useScene } from './testing/scene';

describe('public documents beside the API', () => {
  const { api } = useScene();

  it('GET /docs is an HTML API reference that reads the live OpenAPI document, with no CDN', async () => {
    const response = await api.fetch('GET', '/docs');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.text).toContain(`"openApiUrl":"${OPENAPI_PATH}"`);
    expect(response.text).toContain('<script src="/docs/scalar.js"');
    expect(response.text).not.toMatch(/https?:\/\/(cdn|fonts)\./);
  });

  it('GET /docs/scalar.js serves the reference script from the installed package', async () => {
    const response = await api.fetch('GET', '/docs/scalar.js');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/javascript/);
    expect(response.text.length).toBeGreaterThan(100_000);
  });

  it(`GET ${ASYNCAPI_PATH}: a valid AsyncAPI 3 document of the webhook deliveries, one message per event type, no key needed`, async () => {
    const response = await api.fetch('GET', ASYNCAPI_PATH);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(response.body.asyncapi).toMatch(/^3\./);
    const { document, diagnostics } = await new Parser().parse(response.text);
    expect(diagnostics.filter((d) => d.severity === 0), JSON.stringify(diagnostics)).toEqual([]);
    expect(document).toBeDefined();
    expect(document!.messages().all().map((m) => m.name()).sort()).toEqual([...EVENT_TYPES].sort());
    expect(response.text).not.toMatch(/lop_(test|live)_/);
  });
});
