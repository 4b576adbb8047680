import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { inArray } from 'drizzle-orm';
import { connectDatabase, sandboxRequestLog, withDatabase } from '@lop/db';
import { inject } from 'vitest';
import type { Caller } from '../auth/authenticate';
import { openTestDatabase } from '../../testing/orders';
import { requestLogBodies } from '../routers/request-log-bodies';
import { BODY_LIMIT_BYTES, sourceOf, storedBody, toRequestLogRow, type FinishedRequest } from './record';
import { RequestLogWriter } from './writer';

const connection = openTestDatabase();
afterAll(() => connection.close());
const { db, sql } = connection;

const caller: Caller = { keyId: randomUUID(), keyPrefix: 'lop_test_AbCd', clientId: randomUUID(), laboratoryId: randomUUID(), environment: 'sandbox', scopes: new Set() };

function finished(overrides: Partial<FinishedRequest> = {}): FinishedRequest {
  const text = JSON.stringify({ data: { ok: true }, request_id: 'x' });
  return {
    caller,
    requestId: `req_${randomUUID()}`,
    occurredAt: new Date(),
    method: 'GET',
    route: '/v1/lab',
    scope: null,
    status: 200,
    durationMs: 4.4,
    door: 'rest',
    source: 'rest',
    requestBody: undefined,
    requestBytes: 0,
    responseText: text,
    responseBytes: Buffer.byteLength(text),
    ...overrides,
  };
}

const bodies = requestLogBodies();
const stored = async (ids: string[]) => db.select().from(sandboxRequestLog).where(inArray(sandboxRequestLog.requestId, ids));

describe('the request log writer: off the request path, bounded, and never in the way', () => {
  it('writes a full batch at once, with one INSERT, and the rest on close', async () => {
    const writer = new RequestLogWriter(sql, { batchSize: 3, flushIntervalMs: 60_000 });
    const requests = Array.from({ length: 4 }, () => finished());
    for (const request of requests.slice(0, 3)) writer.record(request);
    await writer.flush();
    expect(await stored(requests.map((r) => r.requestId))).toHaveLength(3);
    writer.record(requests[3]);
    await writer.close();
    expect(await stored(requests.map((r) => r.requestId))).toHaveLength(4);
    expect(writer.counts).toEqual({ recorded: 4, written: 4, dropped: 0, failed: 0, limited: 0 });
  });

  it('admits a client\'s requests up to its share of each second, not one more, and again the next second', () => {
    const writer = new RequestLogWriter(sql, { maxPerClientPerSecond: 3 });
    const at = 1_800_000_000_000;
    expect([1, 2, 3, 4].map(() => writer.admit('client-a', at + 10))).toEqual([true, true, true, false]);
    // Another client has its own share; the next second starts afresh.
    expect(writer.admit('client-b', at + 900)).toBe(true);
    expect(writer.admit('client-a', at + 1000)).toBe(true);
    expect(writer.counts.limited).toBe(1);
  });

  it('drops and counts what does not fit the buffer, instead of holding requests', async () => {
    const dropped: number[] = [];
    const writer = new RequestLogWriter(sql, { batchSize: 100, maxBuffered: 2, flushIntervalMs: 60_000, onDropped: (rows) => dropped.push(rows) });
    const requests = Array.from({ length: 3 }, () => finished());
    for (const request of requests) writer.record(request);
    await writer.close();
    expect(writer.counts).toMatchObject({ recorded: 2, written: 2, dropped: 1 });
    expect(dropped).toEqual([1]);
    expect((await stored(requests.map((r) => r.requestId))).map((r) => r.requestId).sort()).toEqual(requests.slice(0, 2).map((r) => r.requestId).sort());
  });

  it('drops what would take the buffer past its memory budget, and takes requests again once a batch is written', async () => {
    const writer = new RequestLogWriter(sql, { batchSize: 100, maxBufferedBytes: 3 * 1024, flushIntervalMs: 60_000 });
    const large = finished({ requestBytes: 2 * 1024 });
    const second = finished({ requestBytes: 2 * 1024 });
    writer.record(large);
    writer.record(second);
    expect(writer.counts).toMatchObject({ recorded: 1, dropped: 1 });
    await writer.flush();
    const after = finished({ requestBytes: 2 * 1024 });
    writer.record(after);
    await writer.close();
    expect((await stored([large.requestId, second.requestId, after.requestId])).map((r) => r.requestId).sort()).toEqual([large.requestId, after.requestId].sort());
  });

  it('stores a refused body holding text jsonb cannot hold, without failing the batch it is in', async () => {
    const writer = new RequestLogWriter(sql, { batchSize: 100, flushIntervalMs: 60_000, bodies });
    const hostile = finished({
      method: 'POST',
      route: '/v1/orders',
      status: 400,
      requestBody: { ['k\u0000']: 'a\u0000b\ud800' },
      // An error sentence is the service's, kept: what jsonb cannot hold in it becomes U+FFFD.
      responseText: JSON.stringify({ error: { code: 'invalid_request', message: 'x\u0000y' }, request_id: 'req_1' }),
    });
    const neighbour = finished();
    writer.record(hostile);
    writer.record(neighbour);
    await writer.close();
    expect(writer.counts).toMatchObject({ written: 2, failed: 0 });
    const [row] = await stored([hostile.requestId]);
    expect(row.requestBody).toEqual({ $unknown_fields: [{ $redacted: 'string', length: 4 }] });
    expect(row.responseBody).toEqual({ error: { code: 'invalid_request', message: 'x\uFFFDy' }, request_id: 'req_1' });
  });

  it('survives a batch that cannot be written: counted, reported, and the next batch is written', async () => {
    const failures: number[] = [];
    const broken = connectDatabase(withDatabase(inject('databaseUrl'), `missing_${randomUUID().replaceAll('-', '')}`), { max: 1, applicationName: 'request-log-test' });
    const failing = new RequestLogWriter(broken.sql, { batchSize: 2, flushIntervalMs: 60_000, onFailed: (_error, rows) => failures.push(rows) });
    const lost = [finished(), finished()];
    // record() returns at once whatever the database does; the failed batch does not reject anyone.
    for (const request of lost) expect(failing.record(request)).toBeUndefined();
    await expect(failing.flush()).resolves.toBeUndefined();
    expect(failing.counts).toMatchObject({ failed: 2, written: 0 });
    expect(failures).toEqual([2]);
    await broken.close();

    const writer = new RequestLogWriter(sql, { batchSize: 2, flushIntervalMs: 60_000 });
    const next = finished();
    writer.record(next);
    await writer.close();
    expect(await stored([next.requestId])).toHaveLength(1);
  });

  it('writes on its own within the flush interval', async () => {
    const writer = new RequestLogWriter(sql, { batchSize: 100, flushIntervalMs: 50 });
    const request = finished();
    writer.record(request);
    await expect.poll(async () => (await stored([request.requestId])).length, { timeout: 5_000 }).toBe(1);
    await writer.close();
  });
});

describe('what a row keeps', () => {
  it('reads the error code from the envelope, and from the console door\'s tRPC wrapping', () => {
    const envelope = { error: { code: 'not_found', message: 'No order.' }, request_id: 'req_1' };
    const rest = toRequestLogRow(finished({ status: 404, responseText: JSON.stringify(envelope), responseBytes: 10 }), bodies);
    expect(rest).toMatchObject({ errorCode: 'not_found', responseBody: envelope, durationMs: 4, keyPrefix: 'lop_test_AbCd' });
    const trpc = { error: { message: 'No order.', code: -32004, data: { httpStatus: 404, partner: envelope } } };
    expect(toRequestLogRow(finished({ status: 404, door: 'console', responseText: JSON.stringify(trpc), responseBytes: 10 }), bodies)).toMatchObject({ errorCode: 'not_found', responseBody: envelope });
    const ok = { result: { data: { data: { id: 'o' }, request_id: 'req_2' } } };
    expect(toRequestLogRow(finished({ door: 'console', responseText: JSON.stringify(ok), responseBytes: 10 }), bodies)).toMatchObject({ errorCode: null, responseBody: { request_id: 'req_2' } });
    // A code that is not one of the service's is not the partner's text to keep.
    const forged = { error: { code: 'Jane Doe', message: 'x' } };
    expect(toRequestLogRow(finished({ status: 400, responseText: JSON.stringify(forged), responseBytes: 10 })).errorCode).toBeNull();
  });

  it('keeps the source: lop by its User-Agent product token on REST, console by its door, rest for anything else', () => {
    expect(sourceOf('rest', 'lop/0.1.0')).toBe('lop');
    expect(sourceOf('rest', 'lop/')).toBe('lop');
    // Only the product token `lop`, never a name that starts with it, nor one that mentions it.
    for (const agent of ['lopper/1.0', 'curl/8.5.0', 'node', 'my-app lop/0.1.0', undefined]) expect(sourceOf('rest', agent), String(agent)).toBe('rest');
    expect(sourceOf('console', 'lop/0.1.0')).toBe('console');
    expect(toRequestLogRow(finished({ source: 'lop' }))).toMatchObject({ source: 'lop' });
  });

  it('keeps no personal field, free text, key or secret of a body: the allow-list (allow-list.test.ts) decides', () => {
    const body = {
      external_order_id: 'ext-1 lop_test_0123456789abcdefghijklmnopqrstuvwx',
      patient: { legal_first_name: 'Ada' },
      ordering_provider: { npi: '1234567890' },
      aoe_answers: [{ question_key: 'q', answer: 'yes' }],
      clinical_notes: 'fasting',
      nested: [{ Secret: 'whsec_abc' }],
      note: 'signed with whsec_Zm9vYmFy',
    };
    const row = toRequestLogRow(finished({ method: 'POST', route: '/v1/orders', status: 400, requestBody: body }), bodies);
    const text = JSON.stringify(row.requestBody);
    for (const value of ['Ada', '1234567890', 'fasting', 'lop_test_0123', 'whsec_', '"yes"', 'Secret', '"note"']) expect(text).not.toContain(value);
    expect(row.requestBody).toMatchObject({ external_order_id: { $redacted: 'string', length: 49 }, patient: { $redacted: 'object', length: 1 }, aoe_answers: { $redacted: 'array', length: 1 } });
  });

  it(`keeps ${BODY_LIMIT_BYTES} bytes of a body, and marks one past it as truncated`, () => {
    const fits = { t: 'x'.repeat(BODY_LIMIT_BYTES - 8) };
    expect(JSON.stringify(fits)).toHaveLength(BODY_LIMIT_BYTES);
    expect(storedBody(fits)).toEqual(fits);
    const over = { t: 'x'.repeat(BODY_LIMIT_BYTES - 7) };
    expect(storedBody(over)).toEqual({ truncated: true, size_bytes: BODY_LIMIT_BYTES + 1, text: JSON.stringify(over).slice(0, BODY_LIMIT_BYTES) });
  });

  it('never keeps a response that is not JSON or too large to capture, only its size', () => {
    expect(toRequestLogRow(finished({ responseText: '%PDF-1.7 patient', responseBytes: 16 })).responseBody).toEqual({ not_stored: 'not_json', size_bytes: 16 });
    expect(toRequestLogRow(finished({ responseText: '', responseBytes: 200_000 })).responseBody).toEqual({ not_stored: 'too_large', size_bytes: 200_000 });
  });
});
