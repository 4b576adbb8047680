import type { Scope } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { eq, inArray } from 'drizzle-orm';
import { sandboxRequestLog } from '@lop/db';
import { demoId } from '@lop/domain';
import { startTestApi, type TestResponse } from '../testing/harness';
import { expectError } from '../testing/expect-envelope';
import { unique } from '@lop/testing';
import { useScene } from '../testing/scene';

/**
 * The sandbox request log (docs/request-log.md), through the real API: what each door's requests
 * leave in it, what never gets in, and what a reader can see of it.
 */
const { api, connection: fx, fixtures: f } = useScene({ rateLimit: false });
const SUBJECT = 'request-log-subject';

interface Tenant {
  clientId: string;
  key: string;
}

/** A client of its own (granted the demo sandbox program, subject registered), so its log holds only this file's requests. */
async function tenant(scopes?: Scope[]): Promise<Tenant & { keyWith(scopes: Scope[]): Promise<string> }> {
  const { client_id: clientId } = await f.client((await f.demo()).laboratory_id);
  await f.grant(clientId, { id: demoId('program:wellness-sbx'), environment: 'sandbox' });
  const key = await f.key(clientId, 'sandbox', { scopes });
  const subject = await api.call('PUT', `/v1/subjects/${SUBJECT}`, { key: await f.key(clientId, 'sandbox') });
  expect(subject.status).toBe(200);
  // Logged too: wait for it, so each test starts from a settled log.
  await logged([requestIdOf(subject)]);
  return { clientId, key, keyWith: (s) => f.key(clientId, 'sandbox', { scopes: s }) };
}

const PATIENT = { legal_first_name: 'Adelheid', legal_last_name: 'Quintessa', date_of_birth: '1961-02-03', email: 'adelheid@example.org', phone: '+1 555 0100' };
const orderBody = (extra: Record<string, unknown> = {}) => ({
  external_order_id: unique('rlog'),
  program_id: demoId('program:wellness-sbx'),
  item_id: demoId('item:wellness-sbx:CBC'),
  external_subject_id: SUBJECT,
  collection: 'in_person_draw',
  ...extra,
});

const requestIdOf = (response: TestResponse) => response.headers.get('x-request-id')!;
const rowsOf = (requestIds: string[]) => fx.db.select().from(sandboxRequestLog).where(inArray(sandboxRequestLog.requestId, requestIds));
/** The writer flushes about a second after a response; wait for the rows, never for a fixed time. */
async function logged(requestIds: string[]) {
  await expect.poll(async () => (await rowsOf(requestIds)).length, { timeout: 10_000, interval: 100 }).toBe(requestIds.length);
  return rowsOf(requestIds);
}
const readLog = (key: string, query = '') => api.call('GET', `/v1/sandbox/request-log${query}`, { key });
const trpcQuery = (procedure: string, input: unknown, key: string, headers: Record<string, string> = {}) =>
  api.fetch('GET', `/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: { authorization: `Bearer ${key}`, ...headers } });
const trpcMutation = (procedure: string, input: unknown, key: string, headers: Record<string, string> = {}) =>
  api.fetch('POST', `/api/trpc/${procedure}`, { json: input, headers: { authorization: `Bearer ${key}`, ...headers } });

describe('what a sandbox request leaves in the log', () => {
  it('a REST request: time, method, route template, status, error code, request_id, duration and key prefix', async () => {
    const { key } = await tenant();
    const ok = await api.call('GET', '/v1/lab', { key });
    const missing = await api.call('GET', `/v1/orders/${demoId('order:none')}`, { key });
    expect([ok.status, missing.status]).toEqual([200, 404]);
    await logged([requestIdOf(ok), requestIdOf(missing)]);

    const page = await readLog(key);
    expect(page.status, page.text).toBe(200);
    const byId = new Map(page.body.data.entries.map((e: { request_id: string }) => [e.request_id, e]));
    expect(byId.get(requestIdOf(ok))).toMatchObject({ method: 'GET', route: '/v1/lab', status: 200, error_code: null, key_prefix: key.slice(0, 13), source: 'rest' });
    expect(byId.get(requestIdOf(missing))).toMatchObject({ method: 'GET', route: '/v1/orders/{orderId}', status: 404, error_code: 'not_found', source: 'rest' });
    const entry = byId.get(requestIdOf(ok)) as { occurred_at: string; duration_ms: number };
    expect(Math.abs(Date.parse(entry.occurred_at) - Date.now())).toBeLessThan(60_000);
    expect(entry.duration_ms).toBeGreaterThanOrEqual(0);
    // A spelling the dispatcher leaves to express and trpc-to-openapi (partner-rest.ts) logs the envelope the partner got.
    const unusual = await api.call('GET', '/v1/lab?a[b]=1', { key });
    expectError(unusual, 400, 'invalid_request');
    const [row] = await logged([requestIdOf(unusual)]);
    expect(row).toMatchObject({ route: '/v1/lab', status: 400, errorCode: 'invalid_request', responseBody: { error: { code: 'invalid_request', message: unusual.body.error.message }, request_id: unusual.body.request_id } });
    // The log's own reads are not logged.
    expect(page.body.data.entries.some((e: { route: string }) => e.route === '/v1/sandbox/request-log')).toBe(false);
  });

  it('a console action: the tRPC call of a partner procedure, logged as its REST route', async () => {
    const { key } = await tenant();
    const created = await trpcMutation('orders.create', orderBody(), key, { 'idempotency-key': unique('idem') });
    expect(created.status, created.text).toBe(200);
    const cancelled = await trpcMutation('orders.cancel', { orderId: demoId('order:none') }, key);
    expect(cancelled.status).toBe(404);
    const session = await trpcQuery('console.session', {}, key);
    expect(session.status, session.text).toBe(200);
    const poll = await trpcQuery('events.list', {}, key, { 'x-console-background': '1' });
    expect(poll.status, poll.text).toBe(200);
    const [create, cancel] = await logged([requestIdOf(created), requestIdOf(cancelled)]).then((rows) =>
      [requestIdOf(created), requestIdOf(cancelled)].map((id) => rows.find((r) => r.requestId === id)!),
    );
    // Logged with the status REST answers and the console's inspector shows (201 Created), not tRPC's 200.
    expect(create).toMatchObject({ method: 'POST', route: '/v1/orders', status: 201, errorCode: null, door: 'console' });
    expect((create.responseBody as { data: { order_id: string } }).data.order_id).toBe(created.body.result.data.data.order_id);
    expect(cancel).toMatchObject({ method: 'POST', route: '/v1/orders/{orderId}/cancel', status: 404, errorCode: 'not_found', door: 'console' });
    // The console's own views stand for no REST route, and its background polls are no action: not logged.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await rowsOf([requestIdOf(session), requestIdOf(poll)])).toHaveLength(0);
  });

  it('a REST request of lop is logged with source lop, told by its User-Agent; any other client\'s as rest', async () => {
    const { key } = await tenant();
    const lop = await api.call('GET', '/v1/lab', { key, headers: { 'user-agent': 'lop/0.1.0' } });
    const curl = await api.call('GET', '/v1/lab', { key, headers: { 'user-agent': 'curl/8.5.0' } });
    const lookalike = await api.call('GET', '/v1/lab', { key, headers: { 'user-agent': 'lopper/2.0' } });
    await logged([lop, curl, lookalike].map(requestIdOf));
    const sources = async (query: string) =>
      Object.fromEntries((await readLog(key, query)).body.data.entries.map((e: { request_id: string; source: string }) => [e.request_id, e.source]));
    expect(await sources('')).toMatchObject({ [requestIdOf(lop)]: 'lop', [requestIdOf(curl)]: 'rest', [requestIdOf(lookalike)]: 'rest' });
    // What a partner sends to hide lop's own polling.
    const withoutLop = await sources('?source=rest,console');
    expect(Object.keys(withoutLop)).not.toContain(requestIdOf(lop));
    expect(Object.keys(withoutLop)).toContain(requestIdOf(curl));
    expect(Object.keys(await sources('?source=lop'))).toEqual([requestIdOf(lop)]);
  });

  it('an order create with patient data keeps no patient or provider value, no key and no Authorization', async () => {
    const { key } = await tenant();
    const created = await api.call('POST', '/v1/orders', {
      key,
      json: orderBody({ patient: PATIENT, ordering_provider: { npi: '1234567893', name: 'Dr Zebulon Frinkle' }, clinical_notes: 'Fasting since Tuesday', aoe_answers: [{ question_key: 'q', answer: 'Yolanda' }] }),
      headers: { 'idempotency-key': unique('idem') },
    });
    expect(created.status, created.text).toBe(201);
    const refused = await api.call('POST', '/v1/orders', { key, json: orderBody({ patient: { ...PATIENT, nickname: 'Addy' } }), headers: { 'idempotency-key': unique('idem') } });
    expect(refused.status).toBe(400);
    const rows = await logged([requestIdOf(created), requestIdOf(refused)]);
    const text = JSON.stringify(rows);
    for (const value of ['Adelheid', 'Quintessa', '1961-02-03', 'adelheid@example.org', '555 0100', 'Frinkle', '1234567893', 'Fasting', 'Yolanda', 'Addy', key, key.slice(13), 'Bearer']) {
      expect(text, value).not.toContain(value);
    }
    const row = rows.find((r) => r.requestId === requestIdOf(created))!;
    // The allow-list (libs/domain/src/request-log/allow-list.ts): ids and enums kept, the partner's text as its type and size.
    expect(row.requestBody).toMatchObject({
      program_id: demoId('program:wellness-sbx'),
      patient: { $redacted: 'object', length: 5 },
      ordering_provider: { $redacted: 'object', length: 2 },
      clinical_notes: { $redacted: 'string', length: 21 },
      aoe_answers: { $redacted: 'array', length: 1 },
      external_subject_id: { $redacted: 'string', length: SUBJECT.length },
    });
    expect(rows.find((r) => r.requestId === requestIdOf(refused))!.requestBody).toMatchObject({ patient: { $redacted: 'object', length: 6 } });
    expect(row.keyPrefix).toBe(key.slice(0, 13));
    expect(rows.find((r) => r.requestId === requestIdOf(refused))).toMatchObject({ status: 400, errorCode: 'invalid_request' });
  });
});

describe('written after the response, in batches', () => {
  it('a graceful shutdown writes what is still buffered', async () => {
    const { key } = await tenant();
    const own = await startTestApi();
    const call = await own.call('GET', '/v1/lab', { key });
    expect(call.status).toBe(200);
    // Well within the writer's 1 s interval: only the shutdown's flush can have written it.
    await own.close();
    expect(await rowsOf([requestIdOf(call)])).toHaveLength(1);
  });
});

describe('what never gets in, and who can read it', () => {
  it('a production key\'s requests are never logged, and the log refuses production keys', async () => {
    const { clientId } = await tenant();
    const production = await f.key(clientId, 'production');
    const call = await api.call('GET', '/v1/lab', { key: production });
    expect(call.status).toBe(200);
    const sandbox = await api.call('GET', '/v1/lab', { key: await f.key(clientId, 'sandbox') });
    await logged([requestIdOf(sandbox)]);
    expect(await rowsOf([requestIdOf(call)])).toHaveLength(0);
    expect(await fx.db.select().from(sandboxRequestLog).where(eq(sandboxRequestLog.environment, 'production'))).toHaveLength(0);
    expectError(await readLog(production), 403, 'forbidden');
  });

  it('another client\'s requests never appear, and its cursor is refused', async () => {
    const mine = await tenant();
    const theirs = await tenant();
    const own = await api.call('GET', '/v1/lab', { key: mine.key });
    const other = await api.call('GET', '/v1/lab', { key: theirs.key });
    await logged([requestIdOf(own), requestIdOf(other)]);
    const page = await readLog(mine.key);
    const ids = page.body.data.entries.map((e: { request_id: string }) => e.request_id);
    expect(ids).toContain(requestIdOf(own));
    expect(ids).not.toContain(requestIdOf(other));
    expect((await readLog(mine.key, `?request_id=${requestIdOf(other)}`)).body.data.entries).toEqual([]);
    const detail = await trpcQuery('console.requestLogEntry', { request_id: requestIdOf(other) }, mine.key);
    expect(detail.status).toBe(404);
    const theirCursor = (await readLog(theirs.key)).body.data.next_cursor;
    const refused = expectError(await readLog(mine.key, `?after=${theirCursor}`), 400, 'invalid_request');
    expect(refused.details).toEqual([expect.objectContaining({ field: 'after', issue: 'invalid_cursor' })]);
  });

  it('filters by status class, route and request_id; follows from next_cursor', async () => {
    const { key } = await tenant();
    const first = await readLog(key);
    const ok = await api.call('GET', '/v1/lab', { key });
    const missing = await api.call('GET', `/v1/orders/${demoId('order:none')}`, { key });
    await logged([requestIdOf(ok), requestIdOf(missing)]);
    const ids = async (query: string) => (await readLog(key, query)).body.data.entries.map((e: { request_id: string }) => e.request_id);
    expect(await ids('?status_class=4xx')).not.toContain(requestIdOf(ok));
    expect(await ids('?status_class=4xx')).toContain(requestIdOf(missing));
    expect(await ids('?status_class=2xx')).not.toContain(requestIdOf(missing));
    expect(await ids(`?route=${encodeURIComponent('/v1/orders/{orderId}')}`)).toEqual([requestIdOf(missing)]);
    expect(await ids(`?request_id=${requestIdOf(ok)}`)).toEqual([requestIdOf(ok)]);
    // Following: what came after the first read, oldest first.
    const after = await readLog(key, `?after=${first.body.data.next_cursor}&limit=1`);
    expect(after.body.data.entries.map((e: { request_id: string }) => e.request_id)).toEqual([requestIdOf(ok)]);
    expect(after.body.data.has_more).toBe(true);
    const rest = await readLog(key, `?after=${after.body.data.next_cursor}`);
    expect(rest.body.data.entries.map((e: { request_id: string }) => e.request_id)).toEqual([requestIdOf(missing)]);
    expectError(await readLog(key, '?status_class=1xx'), 400, 'invalid_request');
    expectError(await readLog(key, '?limit=201'), 400, 'invalid_request');
    expect((await readLog(key, '?limit=200')).status).toBe(200);
  });

  it('filters by time, method, source, key prefix and text in the stored bodies; refuses a bad value with 400 in the envelope, each limit at its boundary', async () => {
    const t = await tenant();
    const other = await t.keyWith(['orders:write', 'orders:read', 'events:read']);
    const before = new Date().toISOString();
    const created = await api.call('POST', '/v1/orders', { key: t.key, json: orderBody(), headers: { 'idempotency-key': unique('idem') } });
    expect(created.status, created.text).toBe(201);
    const read = await api.call('GET', `/v1/orders/${created.body.data.order_id}`, { key: other });
    expect(read.status).toBe(200);
    await logged([requestIdOf(created), requestIdOf(read)]);
    const ids = async (query: string) => {
      const page = await readLog(t.key, query);
      expect(page.status, page.text).toBe(200);
      return page.body.data.entries.map((e: { request_id: string }) => e.request_id);
    };
    const orderId = created.body.data.order_id as string;
    expect(await ids(`?since=${encodeURIComponent(before)}`)).toEqual([requestIdOf(created), requestIdOf(read)]);
    expect(await ids(`?until=${encodeURIComponent(before)}`)).not.toContain(requestIdOf(created));
    expect(await ids(`?since=${encodeURIComponent(before)}&method=POST`)).toEqual([requestIdOf(created)]);
    expect(await ids(`?since=${encodeURIComponent(before)}&method=GET,POST&source=rest`)).toEqual([requestIdOf(created), requestIdOf(read)]);
    expect(await ids(`?key_prefix=${other.slice(0, 13)}`)).toEqual([requestIdOf(read)]);
    // The order_id is kept in both bodies (a service id); the partner's external_order_id only as its type and size.
    expect(await ids(`?q=${orderId.toUpperCase()}`)).toEqual([requestIdOf(created), requestIdOf(read)]);
    expect(await ids(`?q=${encodeURIComponent(created.body.data.external_order_id)}`)).toEqual([]);
    expect(await ids(`?q=${'a'.repeat(100)}`)).toEqual([]);

    const refused = async (query: string, field: string, issue: string) => {
      const error = expectError(await readLog(t.key, query), 400, 'invalid_request');
      expect(error.details, query).toEqual([expect.objectContaining({ field, issue })]);
    };
    await refused(`?q=${'a'.repeat(101)}`, 'q', 'too_long');
    await refused('?q=', 'q', 'empty_value');
    await refused('?since=yesterday', 'since', 'invalid_format');
    await refused('?until=2026-11-28T10:00:00', 'until', 'invalid_format');
    await refused(`?since=${encodeURIComponent(before)}&until=${encodeURIComponent(before)}`, 'until', 'out_of_range');
    await refused('?method=get', 'method', 'invalid_value');
    await refused('?source=rest,curl', 'source', 'invalid_value');
    await refused('?key_prefix=lop_test_AbCde', 'key_prefix', 'invalid_format');
    await refused('?key_prefix=lop_live_AbCd', 'key_prefix', 'invalid_format');
    // The console's door reads the same filters.
    const overTrpc = await trpcQuery('sandbox.requestLog', { source: 'rest', method: 'POST', q: orderId, limit: 200 }, t.key);
    expect(overTrpc.status, overTrpc.text).toBe(200);
    expect(overTrpc.body.result.data.data.entries.map((e: { request_id: string }) => e.request_id)).toEqual([requestIdOf(created)]);
  });

  it('the detail shows the redacted bodies, only to a key with the route\'s scope', async () => {
    const t = await tenant();
    const created = await api.call('POST', '/v1/orders', { key: t.key, json: orderBody({ patient: PATIENT }), headers: { 'idempotency-key': unique('idem') } });
    expect(created.status).toBe(201);
    await logged([requestIdOf(created)]);
    const detail = await trpcQuery('console.requestLogEntry', { request_id: requestIdOf(created) }, t.key);
    expect(detail.status, detail.text).toBe(200);
    expect(detail.body.result.data.data).toMatchObject({
      route: '/v1/orders',
      status: 201,
      bodies_withheld: false,
      request_body: { patient: { $redacted: 'object', length: 5 }, external_subject_id: { $redacted: 'string', length: SUBJECT.length } },
      response_body: { data: { order_id: created.body.data.order_id, external_subject_id: { $redacted: 'string', length: SUBJECT.length } } },
    });
    const narrow = await t.keyWith(['events:read']);
    const withheld = await trpcQuery('console.requestLogEntry', { request_id: requestIdOf(created) }, narrow);
    expect(withheld.body.result.data.data).toMatchObject({ bodies_withheld: true, request_body: null, response_body: null });
  });
});
