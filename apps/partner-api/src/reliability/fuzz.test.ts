import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument, PARTNER_BASE_PATH } from '@lop/domain';
import { connectFixtures, startTestApi, type TestApi } from '../testing/harness';
import { expectNothingInternal } from '../testing/expect-envelope';
import { NO_RATE_LIMIT } from '../testing/orders';
import { buildTenant, fixtures, type Tenant } from '../testing/tenant';

/**
 * Property-based fuzzing of every partner endpoint: path, query, headers and body (wrong types,
 * huge strings, deep JSON, invalid UTF-8, prototype-pollution keys). Whatever arrives, the answer
 * is never a 5xx, always one of the two envelopes, and a rejected request writes nothing.
 */
const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS ?? 60);

interface Route {
  method: string;
  /** Below the base path, with {params}. */
  template: string;
  params: string[];
  query: string[];
  hasBody: boolean;
}

const connection = connectFixtures();
let api: TestApi;
let tenant: Tenant;
let key: string;
const routes: Route[] = [];

beforeAll(async () => {
  api = await startTestApi(NO_RATE_LIMIT);
  tenant = await buildTenant(fixtures(connection.db));
  key = await tenant.key();
  const document = buildOpenApiDocument({}) as unknown as { paths: Record<string, Record<string, { parameters?: { in: string; name: string }[]; requestBody?: unknown }>> };
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const parameters = operation.parameters ?? [];
      routes.push({
        method: method.toUpperCase(),
        template: path.slice(PARTNER_BASE_PATH.length),
        params: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query').map((p) => p.name),
        hasBody: method !== 'get',
      });
    }
  }
});

afterAll(async () => {
  await api?.close();
  await connection.close();
});

/** Everything a partner request can have written for this tenant's client (rate-limit counters count attempts, not data). */
async function writtenRows(clientId: string): Promise<Record<string, number>> {
  const [row] = await connection.sql<Record<string, number>[]>`
    select
      (select count(*)::int from orders where client_id = ${clientId}) as orders,
      (select count(*)::int from subjects where client_id = ${clientId}) as subjects,
      (select count(*)::int from idempotency_keys where client_id = ${clientId}) as idempotency_keys,
      (select count(*)::int from events where client_id = ${clientId}) as events,
      (select count(*)::int from event_streams where client_id = ${clientId}) as event_streams,
      (select count(*)::int from specimens s join orders o on o.id = s.order_id where o.client_id = ${clientId}) as specimens,
      (select count(*)::int from sandbox_scenario_progress p join orders o on o.id = p.order_id where o.client_id = ${clientId}) as simulations`;
  return row;
}

// ---- generators -------------------------------------------------------------------------------

const nasty = fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '..', '.', '%00', '%ff%fe', '%E0%A4%A', '💥', '\u202e', ' ', 'null', 'undefined', '0', '-1', '1e309', 'NaN');
const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), nasty, fc.uuid(), fc.string({ minLength: 200, maxLength: 400 }));
const huge = fc.integer({ min: 10_000, max: 300_000 }).map((n) => 'x'.repeat(n));
/** Long enough to break limits, short enough to print (a request line or header beyond 16 KB is Node's own 431). */
const long = fc.integer({ min: 200, max: 20_000 }).map((n) => 'x'.repeat(n));

/** A path segment as sent: percent-encoded text, or raw (possibly invalid) escapes. */
const pathSegment = fc.oneof(
  { weight: 3, arbitrary: text.map((t) => encodeURIComponent(t)) },
  { weight: 1, arbitrary: fc.constantFrom('%ff', '%c3%28', '%', '%zz', '%2e%2e', '%00', 'a%2Fb') },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.integer({ min: 200, max: 5_000 }).map((n) => 'a'.repeat(n)) },
);

const queryString = (known: string[]) =>
  fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...known, 'limit', 'cursor', '__proto__', 'constructor[prototype][x]', 'a[]'), text), fc.oneof(text, long, fc.constantFrom('%ff', '-1', '1e99', '0x10', '[]', '{}'))), { maxLength: 4 })
    .map((pairs) => pairs.map(([k, v]) => (/^%/.test(v) ? `${encodeURIComponent(k)}=${v}` : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)).join('&'));

const headerValue = fc.oneof(fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 }), fc.integer({ min: 1_000, max: 6_000 }).map((n) => 'k'.repeat(n)));

const headers = fc.record(
  {
    authorization: fc.oneof({ weight: 6, arbitrary: fc.constant('VALID') }, { weight: 1, arbitrary: headerValue.map((v) => `Bearer ${v}`) }, { weight: 1, arbitrary: headerValue }),
    'content-type': fc.oneof(fc.constant('application/json'), fc.constant('application/json; charset=latin1'), fc.constant('text/plain'), fc.constant('application/x-www-form-urlencoded'), headerValue),
    'idempotency-key': headerValue,
    'x-request-id': headerValue,
    accept: headerValue,
  },
  { requiredKeys: ['authorization'] },
);

/** A body as sent, printed briefly in counterexamples (deep or huge bodies would flood the report). */
class Body {
  constructor(
    readonly label: string,
    readonly bytes: string | Buffer,
  ) {}
  [fc.toStringMethod](): string {
    return `${this.label}: ${String(this.bytes).slice(0, 80)}${String(this.bytes).length > 80 ? '…' : ''}`;
  }
}
const body = (label: string) => (bytes: string | Buffer) => new Body(label, bytes);

/** Bodies that must all be refused (before anything is written). */
const invalidBody = fc.oneof(
  // Any JSON object with at least one key the route does not take, or wrong types for the keys it does.
  fc.dictionary(fc.oneof(text, fc.constantFrom('external_order_id', 'program_id', 'item_id', 'scenario', 'region', '__proto__', 'constructor')), fc.jsonValue({ maxDepth: 3 }), { minKeys: 1, maxKeys: 6 }).map((o) => body('object')(JSON.stringify(o))),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }).map((a) => body('array')(JSON.stringify(a))),
  fc.jsonValue({ maxDepth: 3 }).filter((v) => v === null || typeof v !== 'object').map((v) => body('scalar')(JSON.stringify(v))),
  fc.record({ external_order_id: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), huge), program_id: text, item_id: text, external_subject_id: fc.jsonValue(), collection: fc.jsonValue() }).map((o) => body('wrong types')(JSON.stringify(o))),
  fc.integer({ min: 100, max: 200_000 }).map((depth) => body(`${depth} nested arrays`)('['.repeat(depth) + ']'.repeat(depth))),
  fc.integer({ min: 100, max: 50_000 }).map((depth) => body(`${depth} nested objects`)('{"a":'.repeat(depth) + '1' + '}'.repeat(depth))),
  fc
    .constantFrom(
      '{"__proto__":{"polluted":"yes"}}',
      '{"constructor":{"prototype":{"polluted":"yes"}}}',
      '{"__proto__":{"polluted":"yes"},"scenario":"happy_path"}',
      '{"external_order_id":"x","__proto__":{"isAdmin":true}}',
      '{"a":1,"a":2}',
      '{"a":',
      'not json',
      '\u0000',
      '{"a":"\\ud800"}',
    )
    .map(body('fixed')),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => body('invalid UTF-8')(Buffer.concat([Buffer.from('{"a":"'), Buffer.from(bytes), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]))),
  huge.map((s) => body(`${s.length}-character field`)(JSON.stringify({ external_order_id: s }))),
);

// ---- the property -----------------------------------------------------------------------------

function urlOf(route: Route, segments: string[], query: string): string {
  let path = route.template;
  route.params.forEach((name, i) => (path = path.replace(`{${name}}`, segments[i] ?? 'x')));
  return `${api.url}${PARTNER_BASE_PATH}${path}${query ? `?${query}` : ''}`;
}

async function send(route: Route, url: string, sentHeaders: Record<string, string>, sent: Body) {
  const response = await fetch(url, { method: route.method, headers: sentHeaders, body: route.method === 'GET' ? undefined : sent.bytes });
  const raw = await response.text();
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', requestId: response.headers.get('x-request-id'), raw };
}

function checkEnvelope(route: Route, result: Awaited<ReturnType<typeof send>>, context: string) {
  expect(result.status, `${context} → ${result.raw.slice(0, 300)}`).toBeLessThan(500);
  expect(result.contentType, context).toMatch(/^application\/json/);
  const body = JSON.parse(result.raw);
  expect(body.request_id, context).toBe(result.requestId);
  if (result.status >= 400) {
    expect(Object.keys(body).sort(), context).toEqual(['error', 'request_id']);
    expect(body.error.code, context).toMatch(/^[a-z_]+$/);
    expect(typeof body.error.message, context).toBe('string');
    expectNothingInternal(result.raw);
  } else {
    // Reads may succeed (a valid key and nothing else wrong), and so may the serviceability check, which
    // only reads; a write never may: every body here is invalid.
    expect(route.method === 'GET' || route.template === '/v1/serviceability', `${context}: a write accepted a fuzzed request`).toBe(true);
    expect(body, context).toHaveProperty('data');
  }
}

describe('fuzzing every partner endpoint', () => {
  it('path, query, headers and body: never a 5xx, always an envelope, nothing written', { timeout: 240_000 }, async () => {
    expect(routes.length).toBeGreaterThanOrEqual(20);
    // Listing the sandbox fixtures registers their synthetic subject (idempotently): done once up front.
    expect((await api.call('GET', '/v1/sandbox/order-fixtures', { key })).status).toBe(200);
    const before = await writtenRows(tenant.clientId);
    const checked: string[] = [];
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(fc.array(pathSegment, { minLength: route.params.length, maxLength: route.params.length }), queryString(route.query), headers, invalidBody, async (segments, query, sentHeaders, sent) => {
          const url = urlOf(route, segments, query);
          const finalHeaders = { ...sentHeaders, authorization: sentHeaders.authorization === 'VALID' ? `Bearer ${key}` : sentHeaders.authorization };
          const context = `${route.method} ${url.slice(0, 200)} headers=${JSON.stringify(finalHeaders).slice(0, 200)} body=${sent[fc.toStringMethod]()}`;
          const rowsBefore = route.method === 'GET' ? undefined : await writtenRows(tenant.clientId);
          const result = await send(route, url, finalHeaders, sent);
          checkEnvelope(route, result, context);
          if (rowsBefore) expect(await writtenRows(tenant.clientId), `${context} → ${result.status} ${result.raw.slice(0, 200)}`).toEqual(rowsBefore);
        }),
        { numRuns: RUNS_PER_ROUTE, endOnFailure: true },
      );
      checked.push(`${route.method} ${route.template}`);
    }
    expect(checked).toHaveLength(routes.length);
    expect(await writtenRows(tenant.clientId)).toEqual(before);
    // Nothing leaked into the shared prototype of this process (the API runs in it).
    expect(Object.keys(Object.prototype)).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('a malformed HTTP request (bad request line, control characters in a header) is answered with the error envelope', { timeout: 30_000 }, async () => {
    const { port } = new URL(api.url);
    const rawRequest = (bytes: Buffer) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1');
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
        socket.on('error', reject);
        socket.setTimeout(5_000, () => socket.destroy(new Error('no answer')));
        socket.write(bytes);
      });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constant(Buffer.from(`GET ${PARTNER_BASE_PATH}/v1/health HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n`, 'latin1')),
          fc.constant(Buffer.from('GARBAGE\r\n\r\n')),
          fc.constant(Buffer.from(`GET /${'\u00ff'} HTTP/1.1\r\nHost: x\r\n\r\n`, 'latin1')),
          fc.uint8Array({ minLength: 1, maxLength: 40 }).map((bytes) => Buffer.concat([Buffer.from(`POST ${PARTNER_BASE_PATH}/v1/orders HTTP/1.1\r\nHost: x\r\nX-Junk: `), Buffer.from(bytes.map((b) => (b === 13 || b === 10 ? 1 : b))), Buffer.from('\u0000\r\n\r\n')])),
        ),
        async (bytes) => {
          const answer = await rawRequest(bytes);
          const [head, body] = answer.split('\r\n\r\n');
          expect(head).toMatch(/^HTTP\/1\.1 4\d\d /);
          expect(head.toLowerCase()).toContain('content-type: application/json');
          const parsed = JSON.parse(body);
          expect(parsed.error.code).toBe('invalid_request');
          expect(parsed.request_id).toMatch(/^req_[0-9a-f]{24}$/);
        },
      ),
      { numRuns: 20 },
    );
  });
});
