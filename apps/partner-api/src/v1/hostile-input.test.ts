import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, withDatabase, type TestDatabase } from '@lop/db';
import { startAppOver, type CapturedLog, type TestApi, type TestResponse } from '../testing/harness';
import { expectNothingInternal } from '../testing/expect-envelope';
import { orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';
import { buildTenant, fixtures, testDatabaseUrl, unique } from '@lop/testing';

/**
 * Issue 12 §2: bad input reaches PostgreSQL only as a 400. Each value here answered 500
 * internal_error before (and logged the SQL with its parameters), or was silently changed; each
 * now answers 400 invalid_request with a detail naming the field and the issue, on both doors,
 * and writes nothing.
 */

type Door = 'rest' | 'trpc';
const DOORS: Door[] = ['rest', 'trpc'];

interface Detail {
  field?: string;
  issue: string;
  message?: string;
}

/** The partner envelope of an answer from either door (tRPC carries it in error.data.partner). */
function partnerError(response: TestResponse): { code: string; message: string; details?: Detail[] } {
  const envelope = response.body?.error?.data?.partner ?? response.body;
  expect(envelope?.error, response.text).toBeDefined();
  return envelope.error;
}

function expectRefused(response: TestResponse, status: number, code: string, detail?: Detail) {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const error = partnerError(response);
  // tRPC's own protocol names its codes (BAD_REQUEST); the partner envelope and the whole answer carry nothing internal.
  expectNothingInternal(JSON.stringify(error));
  expect(response.text).not.toMatch(/postgres|Failed query|params:|\bat .+:\d+:\d+|node_modules|ZodError|invalid byte sequence/i);
  expect(error.code).toBe(code);
  if (detail) expect(error.details).toContainEqual(expect.objectContaining(detail));
  return error;
}

const scene = useScene({ observed: true, client: true });
const { api, tenant, connection: fx } = scene;

const validOrder = (overrides: Record<string, unknown> = {}) => orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject, overrides);

/** A call to one procedure through either door: REST by its route, tRPC as the console's client sends it. */
function call(door: Door, procedure: 'orders.create' | 'serviceability.check' | 'programs.requirements' | 'subjects.put', input: Record<string, unknown>, extraHeaders: Record<string, string> = {}) {
  const headers = { authorization: `Bearer ${scene.key}`, 'idempotency-key': unique('idem'), ...extraHeaders };
  if (door === 'trpc') {
    return procedure === 'programs.requirements'
      ? api.fetch('GET', `/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers })
      : api.fetch('POST', `/api/trpc/${procedure}`, { json: input, headers });
  }
  switch (procedure) {
    case 'orders.create':
      return api.call('POST', '/v1/orders', { json: input, headers });
    case 'serviceability.check':
      return api.call('POST', '/v1/serviceability', { json: input, headers });
    case 'programs.requirements': {
      const { programId, ...query } = input;
      return api.call('GET', `/v1/programs/${programId}/requirements?${new URLSearchParams(query as Record<string, string>)}`, { headers });
    }
    case 'subjects.put':
      return api.call('PUT', `/v1/subjects/${encodeURIComponent(String(input.externalSubjectId))}`, { headers });
  }
}

async function rowsOfClient(): Promise<{ orders: number; subjects: number; idempotency_keys: number; events: number }> {
  const [row] = await fx.sql<{ orders: number; subjects: number; idempotency_keys: number; events: number }[]>`
    select
      (select count(*)::int from orders where client_id = ${tenant.clientId}) as orders,
      (select count(*)::int from subjects where client_id = ${tenant.clientId}) as subjects,
      (select count(*)::int from idempotency_keys where client_id = ${tenant.clientId}) as idempotency_keys,
      (select count(*)::int from events where client_id = ${tenant.clientId}) as events`;
  return row;
}

/** Nothing was logged as an error, and no SQL statement or parameter reached the log. */
function expectQuietLog(since: number) {
  const lines = api.log.lines.slice(since);
  expect(lines.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([]);
  expect(JSON.stringify(lines)).not.toMatch(/Failed query|params:|insert into|invalid byte sequence/);
}

describe('a NUL byte, another control character or a lone surrogate in a stored or queried string', () => {
  const refusedText = [
    ['NUL', 'ord\u0000er'],
    ['a lone surrogate (UTF-8 would store U+FFFD instead)', 'ord\ud800er'],
    ['an escape character', 'ord\u001b[2Jer'],
  ] as const;

  for (const door of DOORS) {
    describe(`on the ${door} door`, () => {
      for (const [label, value] of refusedText) {
        it.each(['external_order_id', 'external_subject_id', 'collection_location', 'region', 'billing_mode'])(`orders.create refuses ${label} in %s: 400 invalid_characters, nothing written`, async (field) => {
          const before = await rowsOfClient();
          const since = api.log.lines.length;
          expectRefused(await call(door, 'orders.create', validOrder({ [field]: value })), 400, 'invalid_request', { field, issue: 'invalid_characters' });
          expect(await rowsOfClient()).toEqual(before);
          expectQuietLog(since);
        });
      }

      it('orders.create refuses NUL in nested personal data and free text, naming the path', async () => {
        for (const [overrides, field] of [
          [{ patient: { legal_first_name: 'A\u0000da' } }, 'patient.legal_first_name'],
          [{ ordering_provider: { name: 'Dr\u0000' } }, 'ordering_provider.name'],
          [{ clinical_notes: 'fasting\u0000' }, 'clinical_notes'],
          [{ aoe_answers: [{ question_key: 'fasting', answer: 'yes\u0000' }] }, 'aoe_answers.0.answer'],
        ] as const) {
          expectRefused(await call(door, 'orders.create', validOrder(overrides)), 400, 'invalid_request', { field, issue: 'invalid_characters' });
        }
      });

      it('serviceability.check refuses NUL in region and collection', async () => {
        const base = { program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id };
        expectRefused(await call(door, 'serviceability.check', { ...base, region: 'US\u0000CA' }), 400, 'invalid_request', { field: 'region', issue: 'invalid_characters' });
        expectRefused(await call(door, 'serviceability.check', { ...base, collection: '\u0000' }), 400, 'invalid_request', { field: 'collection', issue: 'invalid_characters' });
      });

      it('programs.requirements refuses NUL in ?region=', async () => {
        const since = api.log.lines.length;
        expectRefused(await call(door, 'programs.requirements', { programId: tenant.sandbox.program.id, region: '\u0000' }), 400, 'invalid_request', { field: 'region', issue: 'invalid_characters' });
        expectQuietLog(since);
      });

      it('subjects.put refuses NUL and a lone surrogate in the subject id, and registers nothing', async () => {
        const before = await rowsOfClient();
        // A URL cannot carry a lone surrogate (it has no UTF-8 to percent-encode), so REST sends NUL only.
        for (const externalSubjectId of door === 'trpc' ? ['\u0000', 'subject\ud800'] : ['\u0000', 'sub\u0007ject']) {
          expectRefused(await call(door, 'subjects.put', { externalSubjectId }), 400, 'invalid_request', { field: 'externalSubjectId', issue: 'invalid_characters' });
        }
        expect(await rowsOfClient()).toEqual(before);
      });
    });
  }

  it('the REST path parameter is judged after percent-decoding: PUT /v1/subjects/%00 and %0A are refused', async () => {
    for (const raw of ['%00', 'a%0Ab', 'a%7Fb']) {
      expectRefused(await api.call('PUT', `/v1/subjects/${raw}`, { key: scene.key }), 400, 'invalid_request', { field: 'externalSubjectId', issue: 'invalid_characters' });
    }
  });

  it('percent-escapes that are not UTF-8 (a lone surrogate\'s bytes, %ff) in a path or query value are 400 invalid_encoding, not U+FFFD', async () => {
    const before = await rowsOfClient();
    for (const raw of ['%ED%A0%80', 'a%ffb', '%C0%80']) {
      expectRefused(await api.call('PUT', `/v1/subjects/${raw}`, { key: scene.key }), 400, 'invalid_request', { field: 'externalSubjectId', issue: 'invalid_encoding' });
      expectRefused(await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}/requirements?region=US${raw}`, { key: scene.key }), 400, 'invalid_request', { field: 'region', issue: 'invalid_encoding' });
    }
    // The tRPC door's ?input= is read by a decoder that would do the same.
    const input = encodeURIComponent(JSON.stringify({ programId: tenant.sandbox.program.id, region: 'US-XX' })).replace('US-XX', 'US%ED%A0%80');
    expectRefused(await api.fetch('GET', `/api/trpc/programs.requirements?input=${input}`, { key: scene.key }), 400, 'invalid_request', { field: 'input', issue: 'invalid_encoding' });
    expect(await rowsOfClient()).toEqual(before);
    // A `%` that starts no escape is text, taken as sent.
    const literal = await api.call('PUT', `/v1/subjects/100%-${unique('s')}`, { key: scene.key });
    expect(literal.status, literal.text).toBe(200);
    expect(literal.body.data.external_subject_id).toMatch(/^100%-s-/);
  });

  it('text beyond ASCII, emoji (surrogate pairs) and free-text line breaks are still stored exactly as sent', async () => {
    const external = `ord-Zoë-😀-${unique('x')}`;
    const created = await call('rest', 'orders.create', validOrder({ external_order_id: external, clinical_notes: 'line one\r\nline\ttwo' }));
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.external_order_id).toBe(external);
    const [row] = await fx.sql<{ external_order_id: string }[]>`select external_order_id from orders where id = ${created.body.data.order_id}`;
    expect(row.external_order_id).toBe(external);
  });
});

describe('a valid ISO 8601 timestamp whose UTC instant falls outside years 0001–9999', () => {
  for (const door of DOORS) {
    it.each(['0000-01-01T00:00:00Z', '9999-12-31T23:59:59-23:59', '0001-01-01T00:00:00+00:01'])(`${door}: requested_collection_at %s is 400 out_of_range, nothing written`, async (value) => {
      const before = await rowsOfClient();
      const since = api.log.lines.length;
      expectRefused(await call(door, 'orders.create', validOrder({ requested_collection_at: value })), 400, 'invalid_request', { field: 'requested_collection_at', issue: 'out_of_range' });
      expect(await rowsOfClient()).toEqual(before);
      expectQuietLog(since);
    });
  }

  it('the ends of the range are accepted and stored as the same instant', async () => {
    for (const value of ['0001-01-01T00:00:00Z', '9999-12-31T00:00:00-23:59']) {
      const created = await call('rest', 'orders.create', validOrder({ requested_collection_at: value }));
      expect(created.status, created.text).toBe(201);
      const [row] = await fx.sql<{ at: string }[]>`select requested_collection_at::text as at from orders where id = ${created.body.data.order_id}`;
      expect(Date.parse(row.at.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))).toBe(Date.parse(value));
    }
  });
});

describe('a body that is not valid for its Content-Encoding', () => {
  const json = () => Buffer.from(JSON.stringify(validOrder()));
  const garbage = Buffer.from('this is not compressed at all');

  /** A POST with raw bytes and the given encoding, on either door. */
  async function post(door: Door, encoding: string, bytes: Buffer): Promise<TestResponse> {
    const path = door === 'rest' ? '/api/public/partner/v1/orders' : '/api/trpc/orders.create';
    const response = await fetch(`${api.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scene.key}`, 'content-type': 'application/json', 'content-encoding': encoding, 'idempotency-key': unique('idem') },
      body: bytes,
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, headers: response.headers, body, text };
  }

  for (const door of DOORS) {
    it.each([
      ['gzip', 'garbage', () => garbage],
      ['br', 'garbage', () => garbage],
      ['deflate', 'garbage', () => garbage],
      ['zstd', 'garbage', () => garbage],
      ['gzip', 'truncated', () => gzipSync(json()).subarray(0, 12)],
      ['br', 'truncated', () => brotliCompressSync(json()).subarray(0, 5)],
    ] as const)(`${door}: %s (%s) that does not decode is 400 invalid_encoding naming Content-Encoding, nothing written`, async (encoding, _label, bytes) => {
      const before = await rowsOfClient();
      const since = api.log.lines.length;
      const error = expectRefused(await post(door, encoding, bytes()), 400, 'invalid_request', { field: 'Content-Encoding', issue: 'invalid_encoding' });
      expect(error.details![0].message).toContain(encoding);
      expect(await rowsOfClient()).toEqual(before);
      expectQuietLog(since);
    });

    it(`${door}: an encoding the service does not know stays 415 unsupported_media_type`, async () => {
      expectRefused(await post(door, 'x-squash', json()), 415, 'unsupported_media_type');
    });
  }

  it('bodies that are valid for their encoding are read as JSON', async () => {
    for (const [encoding, bytes] of [
      ['gzip', gzipSync(json())],
      ['br', brotliCompressSync(json())],
      ['deflate', deflateSync(json())],
      ['zstd', zstdCompressSync(json())],
    ] as const) {
      const response = await post('rest', encoding, bytes);
      expect(response.status, response.text).toBe(201);
    }
  });
});

/**
 * The safety net under the schemas: should a value still reach PostgreSQL and be refused there
 * (SQLSTATE class 22), the answer is 400, not 500, and the log keeps the statement and its
 * parameters out. A trigger in a database of this test's own stands in for a schema gap.
 */
describe('a value PostgreSQL refuses despite the schemas (SQLSTATE class 22)', () => {
  let database: TestDatabase;
  let app: TestApi & { log: CapturedLog };
  let netKey: string;
  let clientId: string;

  beforeAll(async () => {
    database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'hostile');
    const setup = connectDatabase(database.url, { max: 1 });
    const netTenant = await buildTenant(fixtures(setup.db));
    netKey = await netTenant.key();
    clientId = netTenant.clientId;
    await setup.sql.unsafe(`
      create function refuse_for_test() returns trigger language plpgsql as $$
      begin
        if new.external_subject_id like 'class22-%' then raise exception 'refused by a test trigger' using errcode = '22P05'; end if;
        if new.external_subject_id like 'bug-%' then raise exception 'a test trigger failed' using errcode = 'XX000'; end if;
        return new;
      end $$;
      create trigger refuse_for_test before insert on subjects for each row execute function refuse_for_test();`);
    await setup.close();
    app = await startAppOver(connectDatabase(database.url, { max: 2 }));
  });

  afterAll(async () => {
    await app?.close();
    await database?.drop();
  });

  const putSubject = (door: Door, externalSubjectId: string) =>
    door === 'rest'
      ? app.call('PUT', `/v1/subjects/${externalSubjectId}`, { key: netKey })
      : app.fetch('POST', '/api/trpc/subjects.put', { json: { externalSubjectId }, headers: { authorization: `Bearer ${netKey}` } });

  for (const door of DOORS) {
    it(`${door}: answers 400 invalid_request, logs a warning without the SQL or its parameters`, async () => {
      const value = unique('class22');
      const since = app.log.lines.length;
      expectRefused(await putSubject(door, value), 400, 'invalid_request', { issue: 'invalid_characters' });
      const lines = app.log.lines.slice(since);
      expect(lines.filter((line) => line.level >= 50)).toEqual([]);
      const warnings = lines.filter((line) => line.level === 40 && line.err);
      expect(warnings).toHaveLength(1);
      const logged = JSON.stringify(warnings[0]);
      expect(logged).toContain('22P05');
      expect(logged).not.toContain(value);
      expect(logged).not.toContain(clientId);
      expect(logged).not.toMatch(/insert into|params:/);
    });

    it(`${door}: an unexpected database failure is still a 500, logged once as an error without the SQL or its parameters`, async () => {
      const value = unique('bug');
      const since = app.log.lines.length;
      expectRefused(await putSubject(door, value), 500, 'internal_error');
      const errors = app.log.lines.slice(since).filter((line) => line.level >= 50 && line.err);
      expect(errors).toHaveLength(1);
      const logged = JSON.stringify(errors[0].err);
      expect(logged).toContain('a test trigger failed');
      expect(logged).toContain('XX000');
      expect(logged).not.toContain(value);
      expect(logged).not.toContain(clientId);
      expect(logged).not.toMatch(/insert into|params:/);
    });
  }
});
