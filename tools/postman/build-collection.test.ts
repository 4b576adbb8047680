import { PARTNER_BASE_PATH } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '@lop/domain';
import { buildPostmanCollection, buildSandboxEnvironment } from './build-collection';

const document = buildOpenApiDocument() as Record<string, any>;
const collection = await buildPostmanCollection(document);
const requests = (collection.item as any[]).flatMap((folder) => folder.item as any[]);
const scriptOf = (item: any, listen: string): string => (item.event ?? []).filter((e: any) => e.listen === listen).flatMap((e: any) => e.script.exec).join('\n');

describe('the Postman collection generated from the OpenAPI document', () => {
  it('is a v2.1 collection authenticated with a Bearer {{api_key}} at collection level only', () => {
    expect(collection.info.schema).toBe('https://schema.getpostman.com/json/collection/v2.1.0/collection.json');
    expect(collection.auth).toEqual({ type: 'bearer', bearer: [{ key: 'token', value: '{{api_key}}', type: 'string' }] });
    for (const item of requests) expect(item.request.auth, item.name).toBeUndefined();
  });

  it('the sandbox environment template holds base_url, api_key and idempotency_key, and no key', () => {
    const environment = buildSandboxEnvironment();
    expect(environment.values.map((v: any) => v.key)).toEqual(['base_url', 'api_key', 'idempotency_key']);
    expect(environment.values.find((v: any) => v.key === 'api_key').value).toBe('');
    expect(environment.values.find((v: any) => v.key === 'base_url').value).toMatch(new RegExp(`${PARTNER_BASE_PATH}$`));
  });

  it('has a request for every documented operation, each addressed from {{base_url}}/v1', () => {
    const documented = Object.entries(document.paths as Record<string, any>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path.slice(PARTNER_BASE_PATH.length)}`),
    );
    const present = new Set(requests.map((item) => `${item.request.method} /${item.request.url.path.join('/').replace(/\{\{(\w+)\}\}/g, (_: string, v: string) => `{${v.replace(/_(\w)/g, (_m: string, c: string) => c.toUpperCase()).replace(/^external_subject_id$/, 'externalSubjectId')}}`)}`));
    for (const route of documented) expect([...present].some((p) => p.split(' ')[0] === route.split(' ')[0] && p.replace(/\{[^}]+\}/g, '{}') === route.replace(/\{[^}]+\}/g, '{}')), route).toBe(true);
    for (const item of requests) expect(item.request.url.raw, item.name).toMatch(/^\{\{base_url\}\}\/v1\//);
  });

  it('every request asserts its status, and the collection asserts the envelope on every response', () => {
    for (const item of requests) expect(scriptOf(item, 'test'), item.name).toContain("pm.test('status '");
    const collectionTest = collection.event.find((e: any) => e.listen === 'test').script.exec.join('\n');
    expect(collectionTest).toContain('body.request_id');
    expect(collectionTest).toContain("to.have.property('data')");
    expect(collectionTest).toContain('body.error.code');
  });

  it('reads the FHIR view after the result it renders, expecting the Bundle itself rather than the envelope', () => {
    const order = requests.map((item) => item.request.url.raw.split('?')[0]);
    const fhir = order.indexOf('{{base_url}}/v1/orders/{{order_id}}/results/{{result_id}}/fhir');
    expect(fhir).toBeGreaterThan(order.indexOf('{{base_url}}/v1/orders/{{order_id}}/results'));
    expect(scriptOf(requests[fhir], 'prerequest')).toContain("pm.variables.get('result_id')");
    expect(scriptOf(requests[fhir], 'test')).toContain("body.resourceType).to.equal('Bundle')");
    const collectionTest = collection.event.find((e: any) => e.listen === 'test').script.exec.join('\n');
    expect(collectionTest).toMatch(/isFhir = pm\.response\.code < 400 && .*fhir\\\+json/);
  });

  it('each create-order request gets a fresh Idempotency-Key from a uuid, and the replay reuses it', () => {
    const creates = requests.filter((item) => item.request.method === 'POST' && item.request.url.raw === '{{base_url}}/v1/orders');
    expect(creates).toHaveLength(2);
    for (const item of creates) expect(item.request.header).toContainEqual(expect.objectContaining({ key: 'Idempotency-Key', value: '{{idempotency_key}}' }));
    expect(scriptOf(creates[0], 'prerequest')).toMatch(/set\('idempotency_key', uuid\.v4\(\)\)/);
    expect(scriptOf(creates[1], 'prerequest')).toBe('');
    expect(scriptOf(creates[1], 'test')).toContain('Idempotent-Replayed');
  });

  it('reads the event stream from a cursor taken before the order, never from the start of a sandbox with history', () => {
    const routes = requests.map((item) => `${item.request.method} ${item.request.url.raw.split('?')[0]}`);
    const create = routes.indexOf('POST {{base_url}}/v1/orders');
    const reads = requests.map((item, index) => ({ item, index })).filter(({ item }) => item.request.method === 'GET' && item.request.url.raw.startsWith('{{base_url}}/v1/events'));
    const [before, ...after] = reads;
    // Before the order: page to the end of whatever history exists, keeping the cursor.
    expect(before.index).toBeLessThan(create);
    expect(scriptOf(before.item, 'prerequest')).toContain("removeQueryParams('cursor')");
    expect(scriptOf(before.item, 'test')).toContain("pm.collectionVariables.set('events_cursor', body.data.next_cursor)");
    expect(scriptOf(before.item, 'test')).toMatch(/if \(body\.data\.has_more\) pm\.execution\.setNextRequest\(pm\.info\.requestId\)/);
    // After it: every read starts from that cursor.
    expect(after.length).toBeGreaterThan(0);
    for (const { item, index } of after) {
      expect(index, item.name).toBeGreaterThan(create);
      expect(item.request.url.query.find((q: any) => q.key === 'cursor'), item.name).toMatchObject({ value: '{{events_cursor}}', disabled: false });
    }
    expect(scriptOf(after[0].item, 'test')).toContain("order.created' && e.data.order_id === pm.variables.get('order_id')");
  });

  it('runs in partner order: health first, ids captured before they are used, cancel after the order is read', () => {
    const order = requests.map((item) => `${item.request.method} ${item.request.url.raw.split('?')[0]}`);
    const at = (route: string) => order.indexOf(route);
    expect(at('GET {{base_url}}/v1/health')).toBe(0);
    expect(at('GET {{base_url}}/v1/programs')).toBeLessThan(at('GET {{base_url}}/v1/programs/{{program_id}}/catalog'));
    expect(at('PUT {{base_url}}/v1/subjects/{{external_subject_id}}')).toBeLessThan(at('POST {{base_url}}/v1/orders'));
    expect(at('POST {{base_url}}/v1/orders')).toBeLessThan(at('GET {{base_url}}/v1/orders/{{order_id}}'));
    expect(at('GET {{base_url}}/v1/orders/{{order_id}}')).toBeLessThan(at('POST {{base_url}}/v1/orders/{{order_id}}/cancel'));
    expect(scriptOf(requests[at('POST {{base_url}}/v1/orders')], 'test')).toContain("pm.collectionVariables.set('order_id'");
  });
});
