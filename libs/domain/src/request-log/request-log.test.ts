import { randomBytes, randomUUID } from 'node:crypto';
import { drizzle } from 'drizzle-orm/postgres-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { apiClients, laboratories, programGrants, sandboxRequestLog } from '@lop/db';
import { newOrder, ownTestDatabase } from '../../testing/orders';
import { REQUEST_LOG_QUERY_MAX } from '@lop/contract';
import type { Caller } from '../auth/authenticate';
import { PartnerError } from '../http/errors';
import { ensureRetentionPartitions } from '../retention/partitioned-tables';
import { DataProtector } from '../security/protector';
import { listRequestLogInput } from '../routers/sandbox/list-request-log.types';
import { decodeRequestLogCursor, encodeNextRequestLogCursor, encodeRequestLogCursor, listRequestLog, REQUEST_LOG_SCAN_MAX, type RequestLogFilter } from './request-log';

/**
 * The request log's filters (issue 35: time range, method, source, key prefix, text in the stored
 * bodies), read through listRequestLog on a database of this file's own: its plan test fills the
 * table and analyzes it.
 */
const connection = ownTestDatabase('request-log-filters');
beforeAll(async () => {
  await ensureRetentionPartitions(connection.sql, new Date(Date.now() - 6 * 86_400_000));
});

const protector = new DataProtector(randomBytes(32));
const MINUTE = 60_000;

async function newCaller(scopes: string[] = ['events:read', 'orders:read', 'orders:write']): Promise<Caller> {
  const [lab] = await connection.db.insert(laboratories).values({ displayName: `Lab ${randomBytes(3).toString('hex')}`, legalName: 'Lab, Inc.', operatingName: 'Lab' }).returning();
  const [client] = await connection.db.insert(apiClients).values({ laboratoryId: lab.id, name: `Client ${randomBytes(3).toString('hex')}` }).returning();
  return { keyId: randomUUID(), keyPrefix: 'lop_test_AbCd', clientId: client.id, laboratoryId: lab.id, environment: 'sandbox', scopes: new Set(scopes) as Caller['scopes'] };
}

type Line = Partial<typeof sandboxRequestLog.$inferInsert>;
/** Log lines of the caller as the writer stores them; `door` holds the source. */
async function log(caller: Caller, lines: Line[]): Promise<string[]> {
  const rows = lines.map((line) => ({
    laboratoryId: caller.laboratoryId,
    clientId: caller.clientId,
    environment: caller.environment,
    requestId: `req_${randomBytes(8).toString('hex')}`,
    occurredAt: new Date(),
    method: 'GET',
    route: '/v1/lab',
    status: 200,
    durationMs: 3,
    keyPrefix: 'lop_test_AbCd',
    door: 'rest',
    scope: null,
    ...line,
  }));
  await connection.db.insert(sandboxRequestLog).values(rows);
  return rows.map((row) => row.requestId);
}

/** The entries' request_ids for a filter given as REST's query (parsed by the route's own schema). */
async function ids(caller: Caller, query: Record<string, string>): Promise<string[]> {
  const filter = listRequestLogInput.parse(query) as RequestLogFilter;
  return (await listRequestLog(connection.db, protector, caller, filter)).entries.map((e) => e.request_id);
}

const refusal = (query: Record<string, unknown>) => listRequestLogInput.safeParse(query).error?.issues.map((i) => ({ path: i.path.join('.'), code: i.code }));

describe('filters', () => {
  it('by time: since at or after, until before, both within the 7 days kept', async () => {
    const caller = await newCaller();
    const now = Date.now();
    const [old, early, middle, late] = await log(caller, [
      { occurredAt: new Date(now - 8 * 86_400_000 + MINUTE) },
      { occurredAt: new Date(now - 30 * MINUTE) },
      { occurredAt: new Date(now - 20 * MINUTE) },
      { occurredAt: new Date(now - 10 * MINUTE) },
    ]);
    const at = (ms: number) => new Date(ms).toISOString();
    expect(await ids(caller, { since: at(now - 20 * MINUTE) })).toEqual([middle, late]);
    expect(await ids(caller, { until: at(now - 20 * MINUTE) })).toEqual([early]);
    expect(await ids(caller, { since: at(now - 25 * MINUTE), until: at(now - 15 * MINUTE) })).toEqual([middle]);
    // An offset other than Z is the same instant.
    const offset = new Date(now - 20 * MINUTE - 2 * 3_600_000).toISOString().replace('Z', '-02:00');
    expect(await ids(caller, { since: offset })).toEqual([middle, late]);
    // The log keeps 7 days: an earlier since reads from its start, never older.
    expect(await ids(caller, { since: at(now - 30 * 86_400_000) })).not.toContain(old);
  });

  it('refuses a time that is not an ISO 8601 date-time with an offset, and an until not later than since', async () => {
    const caller = await newCaller();
    for (const since of ['2026-11-28', '2026-11-28T09:00:00', 'yesterday', '1700000000']) expect(refusal({ since }), since).toEqual([{ path: 'since', code: 'invalid_format' }]);
    const at = new Date().toISOString();
    for (const until of [at, new Date(Date.now() - 1).toISOString()]) {
      const refused = await listRequestLog(connection.db, protector, caller, listRequestLogInput.parse({ since: at, until }) as RequestLogFilter).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(PartnerError);
      expect(refused).toMatchObject({ errorCode: 'invalid_request', status: 400, details: [{ field: 'until', issue: 'out_of_range' }] });
    }
    expect(await ids(caller, { since: at, until: new Date(Date.now() + 1).toISOString() })).toEqual([]);
  });

  it('by method and by source, one or several comma-separated; rest also stands for a source this release does not know', async () => {
    const caller = await newCaller();
    const [get, post, put, lop, console, unknown] = await log(caller, [
      { method: 'GET' },
      { method: 'POST', route: '/v1/orders', status: 201 },
      { method: 'PUT', route: '/v1/subjects/{externalSubjectId}' },
      { door: 'lop', route: '/v1/events' },
      { door: 'console', method: 'POST', route: '/v1/orders', status: 201 },
      // A source a later release may add: shown (and filtered) as rest, as lop was by the release before it.
      { door: 'carrier-pigeon' },
    ]);
    expect(await ids(caller, { method: 'POST' })).toEqual([post, console]);
    expect(await ids(caller, { method: 'PUT,GET' })).toEqual([get, put, lop, unknown]);
    expect(await ids(caller, { source: 'lop' })).toEqual([lop]);
    expect(await ids(caller, { source: 'rest,console' })).toEqual([get, post, put, console, unknown]);
    expect(await ids(caller, { source: 'rest' })).toEqual([get, post, put, unknown]);
    expect(await ids(caller, { source: 'console,lop,console' })).toEqual([lop, console]);
    const page = await listRequestLog(connection.db, protector, caller, listRequestLogInput.parse({}) as RequestLogFilter);
    expect(page.entries.map((e) => e.source)).toEqual(['rest', 'rest', 'rest', 'lop', 'console', 'rest']);
    expect(await ids(caller, { source: 'lop', method: 'POST' })).toEqual([]);
    for (const [field, value] of [
      ['source', 'curl'],
      ['source', 'rest,'],
      ['source', 'rest, console'],
      ['source', 'REST'],
      ['method', 'get'],
      ['method', 'HEAD'],
      ['method', 'GET,,POST'],
    ]) {
      expect(refusal({ [field]: value }), `${field}=${value}`).toEqual([{ path: field, code: 'custom' }]);
    }
  });

  it('by key prefix: exactly lop_test_ and four characters', async () => {
    const caller = await newCaller();
    const [mine, other] = await log(caller, [{ keyPrefix: 'lop_test_AbCd' }, { keyPrefix: 'lop_test_Wx12' }]);
    expect(await ids(caller, { key_prefix: 'lop_test_Wx12' })).toEqual([other]);
    expect(await ids(caller, { key_prefix: 'lop_test_AbCd' })).toEqual([mine]);
    // Case matters: a prefix is the key's own characters.
    expect(await ids(caller, { key_prefix: 'lop_test_abcd' })).toEqual([]);
    for (const key_prefix of ['lop_test_AbC', 'lop_test_AbCde', 'lop_live_AbCd', 'lop_test_Ab-d', 'AbCd']) expect(refusal({ key_prefix }), key_prefix).toEqual([{ path: 'key_prefix', code: 'invalid_format' }]);
  });

  it('by text in the stored bodies: any case, their JSON text as the detail shows it, no wildcard; only what the allow-list kept, and only bodies this key may read', async () => {
    const caller = await newCaller(['events:read', 'orders:write']);
    const orderId = randomUUID();
    const [created, refused, quoted, percent] = await log(caller, [
      {
        method: 'POST',
        route: '/v1/orders',
        status: 201,
        scope: 'orders:write',
        requestBody: { external_order_id: { $redacted: 'string', length: 9 }, collection: 'in_person_draw' },
        responseBody: { data: { order_id: orderId, lifecycle: 'pending' } },
      },
      { method: 'POST', route: '/v1/orders', status: 422, scope: 'orders:write', responseBody: { error: { code: 'not_orderable', message: 'The order cannot be placed.' } } },
      { scope: null, responseBody: { data: { lifecycle: 'pending' } } },
      { scope: null, responseBody: { data: { rate: '100%_sure' } } },
      // The key lacks results:read: the detail withholds these bodies, so a search must not find text in them.
      { route: '/v1/orders/{orderId}/results', scope: 'results:read', responseBody: { data: [{ order_id: orderId }] } },
    ]);
    expect(await ids(caller, { q: orderId.toUpperCase() })).toEqual([created]);
    expect(await ids(caller, { q: 'NOT_ORDERABLE' })).toEqual([refused]);
    // A field's name is text of the stored JSON too; the redaction marker of a value says only its type.
    expect(await ids(caller, { q: 'external_order_id' })).toEqual([created]);
    // JSON as stored and shown (`"name": value`): a field and its value together.
    expect(await ids(caller, { q: '"lifecycle": "PENDING"' })).toEqual([created, quoted]);
    expect(await ids(caller, { q: '"data": {"lifecycle"' })).toEqual([quoted]);
    expect(await ids(caller, { q: '%' })).toEqual([percent]);
    expect(await ids(caller, { q: '100_' })).toEqual([]);
    // The partner's own text was never stored (redacted to its type and size): nothing to find.
    expect(await ids(caller, { q: 'EXT-12345' })).toEqual([]);
    expect(await ids(caller, { q: 'x'.repeat(REQUEST_LOG_QUERY_MAX) })).toEqual([]);
    expect(refusal({ q: 'x'.repeat(REQUEST_LOG_QUERY_MAX + 1) })).toEqual([{ path: 'q', code: 'too_big' }]);
    expect(refusal({ q: 'a\u0000b' })).toEqual([{ path: 'q', code: 'custom' }]);
    expect(refusal({ q: '' })).toEqual([{ path: 'q', code: 'too_small' }]);
  });

  it('by text: an entry about an order the caller may no longer read (its program withdrawn) is not searched, as its detail withholds its bodies', async () => {
    const { order } = await newOrder(connection.db);
    const caller: Caller = { ...(await newCaller(['events:read', 'orders:read'])), clientId: order.clientId, laboratoryId: order.laboratoryId };
    const [read] = await log(caller, [{ route: '/v1/orders/{orderId}', scope: 'orders:read', responseBody: { data: { order_id: order.id, lifecycle: 'pending' } } }]);
    expect(await ids(caller, { q: 'pending' })).toEqual([read]);
    await connection.db.delete(programGrants).where(eq(programGrants.clientId, order.clientId));
    expect(await ids(caller, { q: 'pending' })).toEqual([]);
    // The line itself stays, as in the detail.
    expect(await ids(caller, {})).toEqual([read]);
  });

  it('combines with the cursor: a follower reads only matching entries, and its cursor moves past the rest', async () => {
    const caller = await newCaller();
    const start = await listRequestLog(connection.db, protector, caller, listRequestLogInput.parse({ source: 'rest,console' }) as RequestLogFilter);
    const [rest, , console] = await log(caller, [{}, { door: 'lop', route: '/v1/events' }, { door: 'console' }, { door: 'lop', route: '/v1/events' }]);
    const next = await listRequestLog(connection.db, protector, caller, listRequestLogInput.parse({ source: 'rest,console', after: start.next_cursor }) as RequestLogFilter);
    expect(next.entries.map((e) => e.request_id)).toEqual([rest, console]);
    const after = await listRequestLog(connection.db, protector, caller, listRequestLogInput.parse({ after: next.next_cursor }) as RequestLogFilter);
    // The last lop poll came after the last match: it is read by a follower without the filter, never twice by one with it.
    expect(after.entries.map((e) => e.source)).toEqual(['lop']);
  });
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

describe('the filtered read', () => {
  it('stays the caller\'s own rows, read by the client index of each day partition it touches: no sequential scan, however many rows other clients have', async () => {
    const caller = await newCaller();
    const fill = async (who: Caller, count: number) =>
      connection.sql`
        insert into sandbox_request_log (laboratory_id, client_id, environment, request_id, occurred_at, method, route, status, duration_ms, key_prefix, door, scope, response_body)
        select ${who.laboratoryId}, ${who.clientId}, 'sandbox', 'req_' || g, now() - (g % 5000) * interval '1 minute', 'GET', '/v1/events', 200, 3, 'lop_test_AbCd',
               case when g % 3 = 0 then 'lop' else 'rest' end, 'events:read', jsonb_build_object('data', jsonb_build_object('n', g))
        from generate_series(1, ${count}::int) g`;
    await fill(caller, 20_000);
    for (let i = 0; i < 3; i++) await fill(await newCaller(), 20_000);
    await connection.sql`analyze sandbox_request_log`;

    const statements: { query: string; params: unknown[] }[] = [];
    const logged = drizzle(connection.sql, { logger: { logQuery: (query, params) => statements.push({ query, params }) } });
    const since = new Date(Date.now() - 2 * 86_400_000).toISOString();
    const first = await listRequestLog(logged, protector, caller, listRequestLogInput.parse({ source: 'rest,console', method: 'GET,POST', since, key_prefix: 'lop_test_AbCd', q: '"n": 1', limit: '200' }) as RequestLogFilter);
    expect(first.entries.length).toBeGreaterThan(0);
    await listRequestLog(logged, protector, caller, listRequestLogInput.parse({ source: 'rest', q: 'nothing-matches', after: first.next_cursor }) as RequestLogFilter);
    // Each read: the edge of its window of REQUEST_LOG_SCAN_MAX entries, then the page inside it.
    const reads = statements.filter((s) => s.query.includes('"sandbox_request_log"') && s.query.includes('limit'));
    expect(reads).toHaveLength(4);

    const holding = new Set((await connection.sql<{ partition: string }[]>`select distinct tableoid::regclass::text as partition from sandbox_request_log where client_id = ${caller.clientId}`).map((r) => r.partition));
    for (const { query, params } of reads) {
      const [{ 'QUERY PLAN': [{ Plan: plan }] }] = await connection.sql.unsafe(`explain (format json) ${query}`, params as never[]);
      const nodes: PlanNode[] = [];
      const walk = (node: PlanNode) => {
        nodes.push(node);
        node.Plans?.forEach(walk);
      };
      walk(plan);
      const where = JSON.stringify(plan);
      expect(plan['Node Type'], where).toBe('Limit');
      const scanned = nodes.filter((n) => n['Relation Name'] && holding.has(n['Relation Name']));
      expect(scanned.length, where).toBeGreaterThan(0);
      for (const node of scanned) {
        const index = node['Node Type'] === 'Bitmap Heap Scan' ? node.Plans?.[0] : node;
        expect(['Index Scan', 'Index Scan Backward', 'Index Only Scan', 'Bitmap Heap Scan'], where).toContain(node['Node Type']);
        // The client index (client_id, environment, laboratory_id, id), by the caller's own ids.
        expect(index?.['Index Name'], where).toMatch(/client_id_environment_laboratory_id_id_idx$|_by_client$/);
        expect(index?.['Index Cond'], where).toContain('client_id');
      }
    }
  });

  it(`examines at most ${REQUEST_LOG_SCAN_MAX} entries a read: the latest page finds matches among the latest ones, a follower pages window by window and finds each match once`, async () => {
    const caller = await newCaller();
    const start = await listRequestLog(connection.db, protector, caller, listRequestLogInput.parse({}) as RequestLogFilter);
    // 5,000 entries, one in a thousand with the text searched for.
    await connection.sql`
      insert into sandbox_request_log (laboratory_id, client_id, environment, request_id, occurred_at, method, route, status, duration_ms, key_prefix, door, scope, response_body)
      select ${caller.laboratoryId}, ${caller.clientId}, 'sandbox', 'req_' || g, now() - interval '1 hour' + g * interval '1 ms', 'GET', '/v1/events', 200, 3, 'lop_test_AbCd', 'rest', 'events:read',
             jsonb_build_object('data', jsonb_build_object('n', g, 'm', case when g % 1000 = 0 then 'needle' else 'hay' end))
      from generate_series(1, 5000) g order by g`;
    const read = (extra: Record<string, string>) => listRequestLog(connection.db, protector, caller, listRequestLogInput.parse({ q: 'needle', ...extra }) as RequestLogFilter);

    const latest = await read({});
    expect(latest.entries.map((e) => e.request_id)).toEqual(['req_4000', 'req_5000']);
    expect(latest.has_more).toBe(false);

    const found: string[] = [];
    const pages: boolean[] = [];
    for (let cursor = start.next_cursor, more = true; more; ) {
      const page = await read({ after: cursor, limit: '200' });
      found.push(...page.entries.map((e) => e.request_id));
      pages.push(page.has_more);
      cursor = page.next_cursor;
      more = page.has_more;
    }
    expect(found).toEqual(['req_1000', 'req_2000', 'req_3000', 'req_4000', 'req_5000']);
    // Windows of 2,000, 2,000 and 1,000 entries: more after the first two.
    expect(pages).toEqual([true, true, false]);
    // Without a filter, nothing is windowed: a page is the next `limit` entries.
    const plain = await listRequestLog(connection.db, protector, caller, listRequestLogInput.parse({ after: start.next_cursor, limit: '200' }) as RequestLogFilter);
    expect(plain.entries).toHaveLength(200);
  });
});

describe('the cursor during a rollout', () => {
  it('reads the format the next release issues as the one this release issues, and refuses it from another client or forged', async () => {
    const caller = await newCaller();
    const other = await newCaller();
    const [first, second, third] = await log(caller, [{}, {}, {}]);
    const page = await listRequestLog(connection.db, protector, caller, { limit: 1 } as RequestLogFilter);
    const [row] = await connection.db.select({ id: sandboxRequestLog.id }).from(sandboxRequestLog).where(eq(sandboxRequestLog.requestId, first));
    const issued = encodeRequestLogCursor(protector, caller, row.id);
    const next = encodeNextRequestLogCursor(protector, caller, row.id);
    expect(page.next_cursor).toHaveLength(32);
    expect(next).not.toHaveLength(32);
    expect(decodeRequestLogCursor(protector, caller, next)).toBe(row.id);
    // A follower moving from a replica of the next release to one of this release sees the same page.
    const fromIssued = await listRequestLog(connection.db, protector, caller, { after: issued } as RequestLogFilter);
    const fromNext = await listRequestLog(connection.db, protector, caller, { after: next } as RequestLogFilter);
    expect(fromNext.entries.map((e) => e.request_id)).toEqual([second, third]);
    expect(fromNext).toEqual(fromIssued);

    const refused = (cursor: string) => {
      try {
        decodeRequestLogCursor(protector, other, cursor);
        return null;
      } catch (error) {
        return (error as PartnerError).details;
      }
    };
    expect(refused(next)).toEqual([{ field: 'after', issue: 'invalid_cursor' }]);
    const forged = Buffer.from(next, 'base64url');
    forged.writeBigUInt64BE(BigInt(row.id + 1), 9);
    expect(() => decodeRequestLogCursor(protector, caller, forged.toString('base64url'))).toThrow(PartnerError);
  });
});
