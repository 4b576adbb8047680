import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ASYNCAPI_PATH, EVENT_PAYLOAD_VERSION, OPENAPI_PATH, PARTNER_API_VERSION, PARTNER_BASE_PATH } from '@lop/contract';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  deliveryHeaders,
  PROJECT_ROOT,
  SERVICE_VERSION,
} from '@lop/domain';
import { buildTenant } from '@lop/testing';
import { expectSuccess } from './testing/expect-envelope';
import { orderBody, ordersClient } from './testing/orders';
import { useScene } from './testing/scene';

const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');

/**
 * SPEC § Versioning and docs/versioning.md: the API version (`v1`) is the path segment, the
 * description documents' info.version and the delivery header; the event payload version is an
 * integer (1); health reports the service build. Each value is checked where a partner meets it.
 */
describe('version strings agree with what each one means', () => {
  const scene = useScene({ key: true });
  const { api, fixtures: f } = scene;
  let openapi: any;
  let asyncapi: any;

  beforeAll(async () => {
    openapi = (await api.fetch('GET', OPENAPI_PATH)).body;
    asyncapi = (await api.fetch('GET', ASYNCAPI_PATH)).body;
  });

  it('the API version v1 is the path segment, both documents’ info.version and x-partner-api-version', () => {
    expect(PARTNER_API_VERSION).toBe('v1');
    expect(openapi.info.version).toBe(PARTNER_API_VERSION);
    expect(asyncapi.info.version).toBe(PARTNER_API_VERSION);
    const paths = Object.keys(openapi.paths);
    expect(paths.length).toBeGreaterThan(10);
    for (const path of paths) expect(path.startsWith(`${PARTNER_BASE_PATH}/${openapi.info.version}/`), path).toBe(true);
    const header = deliveryHeaders({ secret: 'whsec_test', timestamp: 1, body: '{}', deliveryId: 'd', eventId: 'e' })['x-partner-api-version'];
    expect(header).toBe(openapi.info.version);
    expect(asyncapi.components.schemas.DeliveryHeaders.properties['x-partner-api-version'].const).toBe(openapi.info.version);
  });

  it('health reports the service build: the package version, a semver string, not the API version', async () => {
    const health = expectSuccess(await api.call('GET', '/v1/health', { key: scene.key }));
    const overTrpc = await api.fetch('GET', `/api/trpc/health.get?input=${encodeURIComponent('{}')}`, { headers: { authorization: `Bearer ${scene.key}` } });
    expect(overTrpc.status, overTrpc.text).toBe(200);
    expect(overTrpc.body.result.data.data.version).toBe(health.version);
    expect(health.version).toBe(SERVICE_VERSION);
    expect(health.version).toBe(JSON.parse(read('package.json')).version);
    expect(health.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(health.version).not.toBe(openapi.info.version);
    expect(openapi.components.schemas.Health.properties.version.example).toBe(health.version);
  });

  it('an event carries the payload version, the integer 1, on the stream', async () => {
    const tenant = await buildTenant(f);
    const client = ordersClient(api, await tenant.key());
    expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, await client.subject())), 201);
    const [event] = expectSuccess(await client.events('?limit=1')).events;
    expect(event.version).toBe(EVENT_PAYLOAD_VERSION);
    expect(event.version).toBe(1);
    expect(Number.isInteger(event.version)).toBe(true);
  });

  it('docs/versioning.md states each value as the service sends it, and README links to it', () => {
    const page = read('docs/versioning.md');
    expect(page).toContain(`| API version | \`${openapi.info.version}\` |`);
    expect(page).toContain(`| Event payload version | \`${EVENT_PAYLOAD_VERSION}\` |`);
    expect(page).toContain(`| Service build | \`${SERVICE_VERSION}\` |`);
    expect(page).toContain(`webhook header \`x-partner-api-version\` (\`${PARTNER_API_VERSION}\`)`);
    expect(read('README.md')).toContain('(docs/versioning.md)');
    expect(read('docs/getting-started.md')).toContain('(versioning.md)');
  });
});
