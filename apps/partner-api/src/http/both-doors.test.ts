import { SCOPES } from '@lop/contract';
import { beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '@lop/db';
import { createKey, demoId } from '@lop/domain';
import { startAppOver, type TestResponse } from '../testing/harness';
import { expectError } from '../testing/expect-envelope';
import { fixtures, unique } from '@lop/testing';
import { useScene } from '../testing/scene';

/**
 * DESIGN §13: every protection a partner call gets on REST holds on the console's tRPC door too,
 * because it is enforced in the tRPC core, not in one door's middleware.
 */
const LIMIT = 3;
const { api, connection: fx } = useScene({ rateLimit: LIMIT });
let clientId: string;
const SUBJECT = 'both-doors-subject';

const orderBody = () => ({
  external_order_id: unique('doors'),
  program_id: demoId('program:wellness-sbx'),
  item_id: demoId('item:wellness-sbx:CBC'),
  external_subject_id: SUBJECT,
  collection: 'in_person_draw',
});

const keyOf = async (environment: 'sandbox' | 'production' = 'sandbox') => (await createKey(fx.db, { clientId, environment, scopes: [...SCOPES] })).key;

/** A key of a new client (granted the demo sandbox program, subject registered): the create budget is the client's. */
async function freshClientKey(): Promise<string> {
  const f = fixtures(fx.db);
  const { client_id: id } = await f.client((await f.demo()).laboratory_id);
  await f.grant(id, { id: demoId('program:wellness-sbx'), environment: 'sandbox' });
  const key = await f.key(id, 'sandbox');
  expect((await api.call('PUT', `/v1/subjects/${SUBJECT}`, { key })).status).toBe(200);
  return key;
}

/** A tRPC call as the console's httpLink makes it: queries by GET ?input=, mutations by POST. */
function trpc(kind: 'query' | 'mutation', procedure: string, input: unknown, headers: Record<string, string> = {}): Promise<TestResponse> {
  return kind === 'query'
    ? api.fetch('GET', `/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers })
    : api.fetch('POST', `/api/trpc/${procedure}`, { json: input, headers });
}

const createOverRest = (authorization: string) => api.call('POST', '/v1/orders', { json: orderBody(), headers: { authorization, 'idempotency-key': unique('idem') } });
const createOverTrpc = (authorization: string) => trpc('mutation', 'orders.create', orderBody(), { authorization, 'idempotency-key': unique('idem') });

/** The tRPC door's failure: the REST status and code, the REST envelope in data.partner, nothing internal. */
function expectTrpcError(response: TestResponse, status: number, code: string) {
  expect(response.status, response.text).toBe(status);
  expect(response.body.error.data.partner.error.code).toBe(code);
  expect(response.body.error.data.httpStatus).toBe(status);
  expect(response.body.error.message).toBe(response.body.error.data.partner.error.message);
  expect(response.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|localhost:\d|postgres|\bat .+:\d+:\d+|node_modules|SyntaxError|Unexpected token/i);
  return response.body.error.data.partner.error as { code: string; message: string; details?: { field?: string; issue: string }[] };
}

const counterRows = async () => (await fx.sql<{ n: number }[]>`select count(*)::int as n from rate_limit_counters`)[0].n;

beforeAll(async () => {
  const demo = await fixtures(fx.db).demo();
  clientId = demo.client_id;
  expect((await api.call('PUT', `/v1/subjects/${SUBJECT}`, { key: demo.key })).status).toBe(200);
});

describe('the order-creation rate limit', () => {
  it('holds on the tRPC door: 429 rate_limited with Retry-After and RateLimit-* headers', async () => {
    const authorization = `Bearer ${await freshClientKey()}`;
    for (let i = 0; i < LIMIT; i++) {
      const created = await createOverTrpc(authorization);
      expect(created.status, created.text).toBe(200);
      expect(created.headers.get('ratelimit-remaining')).toBe(String(LIMIT - i - 1));
    }
    const limited = await createOverTrpc(authorization);
    expectTrpcError(limited, 429, 'rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get('ratelimit-limit')).toBe(String(LIMIT));
  });

  it('is one budget per (client, environment) across both doors and every spelling of the scheme', async () => {
    const key = await freshClientKey();
    const spellings = ['Bearer', 'bearer', 'BEARER', 'BeArEr', 'bEARER'];
    const statuses: number[] = [];
    for (const [i, scheme] of spellings.entries()) {
      const response = i % 2 === 0 ? await createOverRest(`${scheme} ${key}`) : await createOverTrpc(`${scheme} ${key}`);
      statuses.push(response.status);
    }
    expect(statuses).toEqual([201, 200, 201, 429, 429]);
  });

  it('writes nothing for unauthenticated calls on either door (authenticate first, count after)', async () => {
    const before = await counterRows();
    const junk = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? `Bearer ${unique('junk')}` : i % 3 === 1 ? `Bearer lop_test_${unique('x').padEnd(32, '0')}` : `Basic ${unique('b')}`));
    for (const [i, authorization] of junk.entries()) {
      const response = i % 2 === 0 ? await createOverRest(authorization) : await createOverTrpc(authorization);
      expect(response.status).toBe(401);
    }
    expect(await counterRows()).toBe(before);
  });
});

describe('the console door', () => {
  it('refuses production keys with 403 forbidden and a clear message, on console and partner procedures alike', async () => {
    const authorization = `Bearer ${await keyOf('production')}`;
    for (const [kind, procedure, input] of [
      ['query', 'console.orders', {}],
      ['query', 'health.get', undefined],
      ['query', 'events.list', {}],
      ['mutation', 'orders.create', orderBody()],
    ] as const) {
      const error = expectTrpcError(await trpc(kind, procedure, input, { authorization, 'idempotency-key': unique('idem') }), 403, 'forbidden');
      expect(error.message).toMatch(/sandbox keys only/);
    }
    // The same key still works on REST.
    expect((await api.call('GET', '/v1/health', { headers: { authorization } })).status).toBe(200);
  });

  it('refuses a body over 100 KB with 413 payload_too_large, before reading it', async () => {
    const authorization = `Bearer ${await keyOf()}`;
    const big = { ...orderBody(), external_order_id: 'x'.repeat(101 * 1024) };
    expectError(await api.fetch('POST', '/api/trpc/orders.create', { json: big, headers: { authorization, 'idempotency-key': unique('idem') } }), 413, 'payload_too_large');
    // A declared length over the limit is refused at once, without waiting for 100 MB to arrive.
    const { request } = await import('node:http');
    const started = Date.now();
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${api.url}/api/trpc/orders.create`, { method: 'POST', headers: { authorization, 'content-type': 'application/json', 'content-length': String(100 * 1024 * 1024) } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      req.write('{"external_order_id":"');
    });
    expect(status).toBe(413);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('refuses batched calls (the console sends one call per request) with 400 invalid_request batch_not_allowed, running none of them', async () => {
    const authorization = `Bearer ${await keyOf()}`;
    const before = await counterRows();
    const paths = Array.from({ length: 5 }, () => 'orders.create').join(',');
    const input = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [i, orderBody()]));
    const batches = [
      await api.fetch('POST', `/api/trpc/${paths}?batch=1`, { json: input, headers: { authorization, 'idempotency-key': unique('idem') } }),
      await api.fetch('GET', `/api/trpc/health.get,health.get?batch=1&input=${encodeURIComponent('{"0":{},"1":{}}')}`, { headers: { authorization } }),
      // A batch of one is a batch too.
      await api.fetch('GET', `/api/trpc/health.get?batch=1&input=${encodeURIComponent('{"0":{}}')}`, { headers: { authorization } }),
    ];
    for (const response of batches) {
      expect(response.status, response.text).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'invalid_request', details: [{ field: 'batch', issue: 'batch_not_allowed' }] });
    }
    expect(await counterRows()).toBe(before);
    // One call per request still works.
    expect((await trpc('query', 'health.get', {}, { authorization })).status).toBe(200);
  });

  it('answers malformed JSON with 400 invalid_request, as REST does', async () => {
    const authorization = `Bearer ${await keyOf()}`;
    const headers = { authorization, 'content-type': 'application/json', 'idempotency-key': unique('idem') };
    expectError(await api.fetch('POST', '/api/trpc/orders.create', { rawBody: '{"external_order_id":', headers }), 400, 'invalid_request');
    expectError(await api.call('POST', '/v1/orders', { rawBody: '{"external_order_id":', headers }), 400, 'invalid_request');
    expectTrpcError(await api.fetch('GET', '/api/trpc/events.list?input=%7Bnot-json', { headers: { authorization } }), 400, 'invalid_request');
  });
});

describe('a database outage on the tRPC door', () => {
  it('answers 503 unavailable with Retry-After, like REST, with no address or driver text', async () => {
    const unreachable = await startAppOver(connectDatabase('postgres://postgres@127.0.0.1:9/none', { max: 1 }));
    try {
      const authorization = `Bearer lop_test_${'a'.repeat(32)}`;
      const trpcAnswer = await unreachable.fetch('GET', '/api/trpc/health.get', { headers: { authorization } });
      expectTrpcError(trpcAnswer, 503, 'unavailable');
      expect(trpcAnswer.headers.get('retry-after')).toBe('5');
      const restAnswer = await unreachable.call('GET', '/v1/health', { headers: { authorization } });
      expectError(restAnswer, 503, 'unavailable');
    } finally {
      await unreachable.close();
    }
  });
});
