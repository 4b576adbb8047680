import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { brotliCompressSync, brotliDecompressSync, deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { PARTNER_BASE_PATH } from '@lop/contract';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument, partnerRouter } from '@lop/domain';
import { expectNothingInternal } from '../testing/expect-envelope';
import { orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/**
 * Property-based fuzzing of every partner endpoint, on both doors: path, query, headers and body
 * (wrong types, huge strings, deep JSON, invalid UTF-8, prototype-pollution keys, NUL and other
 * control characters, lone surrogates, instants outside years 0001–9999, bodies that do not decode
 * for their Content-Encoding). Whatever arrives, the answer is never a 5xx, always one of the two
 * envelopes with nothing internal in it, and a rejected request writes nothing.
 *
 * FUZZ_RUNS sets the runs per route (default 60); the hostile near-valid requests and the tRPC
 * door run half as many per route or procedure.
 */
const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS ?? 60);
const HOSTILE_RUNS = Math.max(1, Math.round(RUNS_PER_ROUTE / 2));

interface Route {
  method: string;
  /** Below the base path, with {params}. */
  template: string;
  params: string[];
  query: string[];
  hasBody: boolean;
}

const scene = useScene({ rateLimit: false, client: true });
const { api, tenant, connection } = scene;
/** A real order and subject (scene.subject) of the tenant, so near-valid requests reach the code that reads and writes them. */
let orderId: string;
const routes: Route[] = [];

beforeAll(async () => {
  const created = await scene.client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject));
  expect(created.status, created.text).toBe(201);
  orderId = created.body.data.order_id;
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

/** Characters no stored or queried partner string may carry (common-schemas): refused in every field. */
const lone = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit));
const refusedCharacter = fc.oneof(
  fc.constant('\u0000'),
  fc.integer({ min: 0x01, max: 0x1f }).filter((c) => c !== 0x09 && c !== 0x0a && c !== 0x0d).map((c) => String.fromCharCode(c)),
  fc.constant('\u007f'),
  // Kept unpaired: a high surrogate never directly before a low one.
  lone.map((s) => (s < '\udc00' ? `${s}x` : `x${s}`)),
);
/** Text holding at least one refused character somewhere. */
const hostileText = fc.tuple(fc.string({ maxLength: 20 }), refusedCharacter, fc.string({ maxLength: 20 })).map(([a, bad, b]) => a + bad + b);
/** Any UTF-16 code unit, lone surrogates included (fc.string's own units are well-formed). */
const anyUnitText = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)), maxLength: 30 });

/** ISO 8601 with an offset, well-formed, whose UTC instant falls outside years 0001–9999. */
const pad = (n: number, width: number) => String(n).padStart(width, '0');
const outOfRangeInstant = fc.oneof(
  fc.constantFrom('0000-01-01T00:00:00Z', '9999-12-31T23:59:59-23:59', '0001-01-01T00:00:00+00:01', '0000-06-15T12:00:00.5+05:30'),
  fc.record({ month: fc.integer({ min: 1, max: 12 }), day: fc.integer({ min: 1, max: 28 }), hour: fc.integer({ min: 0, max: 23 }) }).map(({ month, day, hour }) => `0000-${pad(month, 2)}-${pad(day, 2)}T${pad(hour, 2)}:00:00Z`),
  fc.integer({ min: 1, max: 23 * 60 + 59 }).map((minutes) => `9999-12-31T23:59:59-${pad(Math.floor(minutes / 60), 2)}:${pad(minutes % 60, 2)}`),
);
/** What else a timestamp field may be sent: malformed, or beyond what ISO 8601's four digits allow. */
const oddInstant = fc.oneof(outOfRangeInstant, fc.constantFrom('+010000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', '2025-02-30T00:00:00Z', '2025-01-01T24:00:00Z', '2025-01-01T00:00:60Z', '1e309', ''));

const nasty = fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '..', '.', '%00', '%ff%fe', '%E0%A4%A', '💥', '\u202e', ' ', 'null', 'undefined', '0', '-1', '1e309', 'NaN', '\u0000', 'a\u0000b', '\u001b[2J', '\u007f', '\ud800', 'a\udc00', '\r\n', '\t');
const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), nasty, fc.uuid(), fc.string({ minLength: 200, maxLength: 400 }), hostileText, anyUnitText, oddInstant);
const huge = fc.integer({ min: 10_000, max: 300_000 }).map((n) => 'x'.repeat(n));
/** Long enough to break limits, short enough to print (a request line or header beyond 16 KB is Node's own 431). */
const long = fc.integer({ min: 200, max: 20_000 }).map((n) => 'x'.repeat(n));

/**
 * Percent-encodes text for a URL. A lone surrogate has no UTF-8 (encodeURIComponent throws), so it
 * goes out as the three bytes a careless encoder would write for it (WTF-8), which are not UTF-8.
 */
function percentEncode(value: string): string {
  return value
    .split(/(\p{Cs})/u)
    .map((part) => {
      if (!/^\p{Cs}$/u.test(part)) return encodeURIComponent(part);
      const unit = part.charCodeAt(0);
      return [0xed, 0xa0 + ((unit >> 6) & 0x1f), 0x80 + (unit & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    })
    .join('');
}

/** A path segment as sent: percent-encoded text, or raw (possibly invalid) escapes. */
const pathSegment = fc.oneof(
  { weight: 3, arbitrary: text.map(percentEncode) },
  { weight: 1, arbitrary: fc.constantFrom('%ff', '%c3%28', '%', '%zz', '%2e%2e', '%00', 'a%2Fb', '%0A', '%1B', '%7F', '%ED%A0%80', '%C0%80') },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.integer({ min: 200, max: 5_000 }).map((n) => 'a'.repeat(n)) },
);

const queryString = (known: string[]) =>
  fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...known, 'limit', 'cursor', 'region', '__proto__', 'constructor[prototype][x]', 'a[]'), text), fc.oneof(text, long, fc.constantFrom('%ff', '%00', '%ED%A0%80', '-1', '1e99', '0x10', '[]', '{}'))), { maxLength: 4 })
    .map((pairs) => pairs.map(([k, v]) => (/^%/.test(v) ? `${percentEncode(k)}=${v}` : `${percentEncode(k)}=${percentEncode(v)}`)).join('&'));

const headerValue = fc.oneof(fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 }), fc.integer({ min: 1_000, max: 6_000 }).map((n) => 'k'.repeat(n)));
const contentEncoding = fc.oneof(fc.constantFrom('gzip', 'br', 'deflate', 'identity', 'GZIP', 'gzip, br', 'x-unknown', 'compress'), headerValue);

const headers = fc.record(
  {
    authorization: fc.oneof({ weight: 6, arbitrary: fc.constant('VALID') }, { weight: 1, arbitrary: headerValue.map((v) => `Bearer ${v}`) }, { weight: 1, arbitrary: headerValue }),
    'content-type': fc.oneof(fc.constant('application/json'), fc.constant('application/json; charset=latin1'), fc.constant('text/plain'), fc.constant('application/x-www-form-urlencoded'), headerValue),
    'content-encoding': contentEncoding,
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
    const shown = Buffer.isBuffer(this.bytes) ? this.bytes.toString('latin1') : this.bytes;
    return `${this.label}: ${JSON.stringify(shown.slice(0, 80))}${shown.length > 80 ? '…' : ''}`;
  }
}
const body = (label: string) => (bytes: string | Buffer) => new Body(label, bytes);

/** Bodies that must all be refused (before anything is written). */
const invalidBody = fc.oneof(
  // Any JSON object with at least one key the route does not take, or wrong types for the keys it does.
  fc.dictionary(fc.oneof(text, fc.constantFrom('external_order_id', 'program_id', 'item_id', 'scenario', 'region', 'requested_collection_at', '__proto__', 'constructor')), fc.oneof(fc.jsonValue({ maxDepth: 3 }), text), { minKeys: 1, maxKeys: 6 }).map((o) => body('object')(JSON.stringify(o))),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }).map((a) => body('array')(JSON.stringify(a))),
  fc.jsonValue({ maxDepth: 3 }).filter((v) => v === null || typeof v !== 'object').map((v) => body('scalar')(JSON.stringify(v))),
  fc.record({ external_order_id: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), huge, hostileText), program_id: text, item_id: text, external_subject_id: fc.jsonValue(), collection: fc.jsonValue(), requested_collection_at: oddInstant }).map((o) => body('wrong types')(JSON.stringify(o))),
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
      '{"a":"\\u0000"}',
    )
    .map(body('fixed')),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => body('invalid UTF-8')(Buffer.concat([Buffer.from('{"a":"'), Buffer.from(bytes), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]))),
  huge.map((s) => body(`${s.length}-character field`)(JSON.stringify({ external_order_id: s }))),
  // Bytes that no decoder takes, whatever Content-Encoding the request names.
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => body('garbage bytes')(Buffer.from(bytes))),
);

const DECODERS: Record<string, (bytes: Buffer) => Buffer> = { gzip: gunzipSync, br: brotliDecompressSync, deflate: inflateSync };
/** True when `bytes` are not a valid stream for `encoding` (a few random bytes can be a valid, empty brotli stream). */
const undecodableAs = (encoding: string, bytes: Uint8Array) => {
  try {
    DECODERS[encoding](Buffer.from(bytes));
    return false;
  } catch {
    return true;
  }
};

/** Bytes sent with a Content-Encoding they are not valid for: garbage, or a real stream cut short. */
const badlyEncoded = (json: string) =>
  fc.oneof(
    fc
      .tuple(fc.constantFrom('gzip', 'br', 'deflate'), fc.uint8Array({ minLength: 1, maxLength: 64 }))
      .filter(([encoding, bytes]) => undecodableAs(encoding, bytes))
      .map(([encoding, bytes]) => ({ encoding, bytes: Buffer.from(bytes), label: `${encoding} garbage` })),
    fc.tuple(fc.constantFrom('gzip', 'br', 'deflate'), fc.integer({ min: 1, max: 8 })).map(([encoding, keep]) => {
      const whole = encoding === 'gzip' ? gzipSync(json) : encoding === 'br' ? brotliCompressSync(json) : deflateSync(json);
      return { encoding, bytes: whole.subarray(0, Math.min(keep, whole.length - 1)), label: `${encoding} truncated` };
    }).filter(({ encoding, bytes }) => undecodableAs(encoding, bytes)),
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

// ---- near-valid requests: everything valid but one hostile part -------------------------------

/**
 * Random junk is mostly refused by the first check it meets. These requests are valid in every
 * part but one — a stored or queried string with a refused character, an instant out of range, a
 * path or query parameter likewise, or a body that does not decode — so the hostile part travels
 * as far into the service as it can. Each must be refused with a 4xx and write nothing.
 */
const validBodyOf = (route: Route): Record<string, unknown> => {
  switch (`${route.method} ${route.template}`) {
    case 'POST /v1/orders':
      return orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject, { region: tenant.region, requested_collection_at: '2030-01-01T09:00:00Z', collection_location: 'PSC 12' });
    case 'POST /v1/serviceability':
      return { program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, region: tenant.region, collection: 'in_person_draw' };
    case 'POST /v1/sandbox/orders/{orderId}/simulate':
      return { scenario: 'happy_path' };
    default:
      return {};
  }
};

const validParam = (name: string): string | undefined =>
  ({ programId: tenant.sandbox.program.id, orderId, resultId: randomUUID(), externalSubjectId: scene.subject, item_id: tenant.sandbox.item.id, region: tenant.region, limit: '10', retrieval_id: randomUUID() })[name];

/** One hostile value for a field: text with a refused character, or an instant out of range where a timestamp goes. */
const hostileValueFor = (field: string) => (/_at$/.test(field) ? outOfRangeInstant : hostileText);

/** Where the one hostile part of a body goes: a field the route takes (nested ones included), or one it does not. */
const hostileBodyField = (valid: Record<string, unknown>) =>
  fc.oneof(
    ...[...Object.keys(valid), 'requested_collection_at', 'collection_location', 'clinical_notes'].filter((k, i, all) => all.indexOf(k) === i).map((field) => hostileValueFor(field).map((value) => ({ ...valid, [field]: value }))),
    hostileText.map((value) => ({ ...valid, patient: { legal_first_name: value } })),
    hostileText.map((value) => ({ ...valid, aoe_answers: [{ question_key: 'fasting', answer: value }] })),
    hostileText.map((value) => ({ ...valid, [value]: 'x' })),
  );

interface NearValid {
  label: string;
  path: Record<string, string>;
  query: Record<string, string>;
  body?: { bytes: string | Buffer; encoding?: string };
}

function nearValidRequest(route: Route): fc.Arbitrary<NearValid> {
  const path = Object.fromEntries(route.params.map((name) => [name, percentEncode(validParam(name) ?? 'x')]));
  const query = Object.fromEntries(route.query.flatMap((name) => (validParam(name) ? [[name, percentEncode(validParam(name)!)]] : [])));
  const valid = validBodyOf(route);
  const hasBody = route.method !== 'GET';
  const json = hasBody ? { bytes: JSON.stringify(valid) } : undefined;
  const kinds: fc.Arbitrary<NearValid>[] = [
    // A query parameter the route reads, or one it does not take, carrying a refused character.
    fc.tuple(fc.constantFrom(...route.query, 'region', 'cursor', 'limit'), hostileText).map(([name, value]) => ({ label: `query ${name}`, path, query: { ...query, [name]: percentEncode(value) }, body: json })),
  ];
  if (route.params.length > 0) {
    kinds.push(fc.tuple(fc.constantFrom(...route.params), fc.oneof(hostileText.map(percentEncode), fc.constantFrom('%00', '%0A', '%1B', '%7F', '%ED%A0%80'))).map(([name, value]) => ({ label: `path ${name}`, path: { ...path, [name]: value }, query, body: json })));
  }
  if (hasBody) {
    kinds.push(hostileBodyField(valid).map((hostile) => ({ label: 'body field', path, query, body: { bytes: JSON.stringify(hostile) } })));
    kinds.push(badlyEncoded(JSON.stringify(valid)).map(({ encoding, bytes, label }) => ({ label, path, query, body: { bytes, encoding } })));
  }
  return fc.oneof(...kinds);
}

async function sendNearValid(route: Route, request: NearValid) {
  let url = route.template;
  for (const [name, value] of Object.entries(request.path)) url = url.replace(`{${name}}`, value);
  const query = Object.entries(request.query).map(([name, value]) => `${encodeURIComponent(name)}=${value}`).join('&');
  const headers: Record<string, string> = { authorization: `Bearer ${scene.key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() };
  if (request.body?.encoding) headers['content-encoding'] = request.body.encoding;
  const target = `${api.url}${PARTNER_BASE_PATH}${url}${query ? `?${query}` : ''}`;
  const response = await fetch(target, { method: route.method, headers, body: route.method === 'GET' ? undefined : request.body?.bytes });
  const raw = await response.text();
  return { target, status: response.status, contentType: response.headers.get('content-type') ?? '', requestId: response.headers.get('x-request-id'), raw };
}

// ---- the tRPC door ------------------------------------------------------------------------------

interface ProcedureUnderTest {
  path: string;
  type: 'query' | 'mutation';
  takesInput: boolean;
}

const procedures: ProcedureUnderTest[] = Object.entries(partnerRouter._def.procedures).map(([path, procedure]) => {
  const def = (procedure as unknown as { _def: { type: 'query' | 'mutation'; inputs: unknown[] } })._def;
  return { path, type: def.type, takesInput: def.inputs.length > 0 };
});

/** A valid input for each procedure, as the console sends it; procedures not named take `{}`. */
const validInputOf = (path: string): Record<string, unknown> => {
  const resultId = randomUUID();
  const inputs: Record<string, Record<string, unknown>> = {
    'programs.get': { programId: tenant.sandbox.program.id },
    'programs.catalog': { programId: tenant.sandbox.program.id },
    'programs.requirements': { programId: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, region: tenant.region },
    'serviceability.check': { program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, region: tenant.region, collection: 'in_person_draw' },
    'subjects.put': { externalSubjectId: scene.subject },
    'orders.create': orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject, { region: tenant.region, requested_collection_at: '2030-01-01T09:00:00Z', collection_location: 'PSC 12' }),
    'orders.get': { orderId },
    'orders.cancel': { orderId },
    'orders.exceptions': { orderId },
    'results.list': { orderId },
    'results.get': { orderId, resultId },
    'results.report': { orderId, resultId },
    'results.reportDocument': { orderId, resultId, retrieval_id: randomUUID() },
    'events.list': { limit: 10 },
    'sandbox.simulate': { orderId, scenario: 'happy_path' },
    'console.orders': { limit: 10 },
    'console.eventDeliveries': { event_ids: [] },
  };
  return inputs[path] ?? {};
};

interface TrpcCall {
  label: string;
  /** Must be refused: the input (or its encoding) is valid but for one hostile part. */
  hostile: boolean;
  input?: unknown;
  /** A raw ?input= (queries) or body (mutations) instead of JSON of `input`. */
  raw?: string | Buffer;
  encoding?: string;
}

function trpcCall(procedure: ProcedureUnderTest): fc.Arbitrary<TrpcCall> {
  const valid = validInputOf(procedure.path);
  const kinds: fc.Arbitrary<TrpcCall>[] = [
    // Anything at all as input: most of it is refused, some reads may succeed; none may fail with a 5xx.
    fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.dictionary(text, fc.oneof(fc.jsonValue({ maxDepth: 2 }), text), { maxKeys: 5 })).map((input) => ({ label: 'any input', hostile: false, input })),
    fc.oneof(fc.constantFrom('{', '%00', '"\\u0000"', '{"json":', 'null', '[]', '{"a":"\\ud800"}'), hostileText.map(percentEncode)).map((raw) => ({ label: 'raw input', hostile: false, raw })),
  ];
  if (procedure.takesInput) kinds.push(hostileBodyField(valid).map((input) => ({ label: 'hostile field', hostile: true, input })));
  if (procedure.type === 'mutation') kinds.push(badlyEncoded(JSON.stringify(valid)).map(({ encoding, bytes, label }) => ({ label, hostile: true, raw: bytes, encoding })));
  return fc.oneof(...kinds);
}

async function sendTrpc(procedure: ProcedureUnderTest, call: TrpcCall) {
  const headers: Record<string, string> = { authorization: `Bearer ${scene.key}`, 'idempotency-key': randomUUID() };
  let response: Response;
  if (procedure.type === 'query') {
    const input = call.raw !== undefined ? String(call.raw) : call.input === undefined ? undefined : encodeURIComponent(JSON.stringify(call.input));
    response = await fetch(`${api.url}/api/trpc/${procedure.path}${input === undefined ? '' : `?input=${input}`}`, { headers });
  } else {
    headers['content-type'] = 'application/json';
    if (call.encoding) headers['content-encoding'] = call.encoding;
    response = await fetch(`${api.url}/api/trpc/${procedure.path}`, { method: 'POST', headers, body: call.raw ?? JSON.stringify(call.input ?? null) });
  }
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', raw: await response.text() };
}

/** A tRPC answer: JSON; a failure carries the partner envelope (in error.data.partner, or as the body) with nothing internal. */
function checkTrpcAnswer(result: Awaited<ReturnType<typeof sendTrpc>>, context: string) {
  expect(result.status, `${context} → ${result.raw.slice(0, 300)}`).toBeLessThan(500);
  expect(result.contentType, context).toMatch(/^application\/json/);
  expect(result.raw, context).not.toMatch(/postgres|Failed query|params:|\bat .+:\d+:\d+|node_modules|ZodError|invalid byte sequence|ECONN/i);
  const body = JSON.parse(result.raw);
  if (result.status >= 400) {
    const envelope = body.error?.data?.partner ?? body;
    expect(envelope.error?.code, context).toMatch(/^[a-z_]+$/);
    expect(envelope.request_id, context).toMatch(/^req_[0-9a-f]{24}$/);
    expectNothingInternal(JSON.stringify(envelope));
  }
}

describe('fuzzing every partner endpoint', () => {
  it('path, query, headers and body: never a 5xx, always an envelope, nothing written', { timeout: 240_000 }, async () => {
    expect(routes.length).toBeGreaterThanOrEqual(20);
    // Listing the sandbox fixtures registers their synthetic subject (idempotently): done once up front.
    expect((await api.call('GET', '/v1/sandbox/order-fixtures', { key: scene.key })).status).toBe(200);
    const before = await writtenRows(tenant.clientId);
    const checked: string[] = [];
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(fc.array(pathSegment, { minLength: route.params.length, maxLength: route.params.length }), queryString(route.query), headers, invalidBody, async (segments, query, sentHeaders, sent) => {
          const url = urlOf(route, segments, query);
          const finalHeaders = { ...sentHeaders, authorization: sentHeaders.authorization === 'VALID' ? `Bearer ${scene.key}` : sentHeaders.authorization };
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

  it('near-valid requests with one hostile part, on every route: refused with a 4xx, never a 5xx, nothing written', { timeout: 240_000 }, async () => {
    const before = await writtenRows(tenant.clientId);
    const checked: string[] = [];
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(nearValidRequest(route), async (request) => {
          const rowsBefore = await writtenRows(tenant.clientId);
          const result = await sendNearValid(route, request);
          const context = `${route.method} ${result.target.slice(0, 200)} (${request.label}) body=${JSON.stringify(String(request.body?.bytes ?? '').slice(0, 120))}`;
          checkEnvelope(route, result, context);
          expect(result.status, `${context} → ${result.raw.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
          expect(await writtenRows(tenant.clientId), context).toEqual(rowsBefore);
        }),
        { numRuns: HOSTILE_RUNS, endOnFailure: true },
      );
      checked.push(`${route.method} ${route.template}`);
    }
    expect(checked).toHaveLength(routes.length);
    expect(await writtenRows(tenant.clientId)).toEqual(before);
  });

  it('the tRPC door, every procedure: fuzzed and hostile input never a 5xx, nothing internal, nothing written', { timeout: 240_000 }, async () => {
    expect(procedures.length).toBeGreaterThanOrEqual(20);
    // The first read of the event stream may create its row; done once up front, as the fixtures listing is.
    expect((await api.call('GET', '/v1/events', { key: scene.key })).status).toBe(200);
    const before = await writtenRows(tenant.clientId);
    const checked: string[] = [];
    for (const procedure of procedures) {
      await fc.assert(
        fc.asyncProperty(trpcCall(procedure), async (call) => {
          const rowsBefore = await writtenRows(tenant.clientId);
          const result = await sendTrpc(procedure, call);
          const shown = call.raw !== undefined ? (Buffer.isBuffer(call.raw) ? call.raw.toString('latin1') : call.raw) : JSON.stringify(call.input);
          const context = `${procedure.type} ${procedure.path} (${call.label}) ${JSON.stringify(String(shown).slice(0, 160))}`;
          checkTrpcAnswer(result, context);
          if (call.hostile) expect(result.status, `${context} → ${result.raw.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
          expect(await writtenRows(tenant.clientId), context).toEqual(rowsBefore);
        }),
        { numRuns: HOSTILE_RUNS, endOnFailure: true },
      );
      checked.push(procedure.path);
    }
    expect(checked).toEqual(Object.keys(partnerRouter._def.procedures));
    expect(await writtenRows(tenant.clientId)).toEqual(before);
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
