import { randomBytes } from 'node:crypto';
import { EVENT_TYPES } from '@lop/contract';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectDatabase } from '@lop/db';
import { DataProtector, encodeCursor, eventDataSchema, type Caller } from '@lop/domain';
import { startTestApi } from '../testing/harness';
import { buildTenant, type Tenant, testDatabaseUrl } from '@lop/testing';
import { expectError, expectSuccess, ts, uuid } from '../testing/expect-envelope';
import { callerOf, createOrderDirect, inParallel, NO_RATE_LIMIT, orderBody, ordersClient, type OrdersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

/** The spec's allow-list of `data` keys, copied literally from SPEC.md § Events. */
const SPEC_DATA_KEYS = [
  'order_id',
  'external_order_id',
  'program_id',
  'client_id',
  'environment',
  'lifecycle',
  'next_action',
  'specimen_state',
  'result_id',
  'result_version',
  'result_provenance',
  'result_is_critical',
  'action_required_code',
  'links',
];
const SPEC_EVENT_TYPES = ['order.created', 'order.updated', 'order.cancelled', 'specimen.updated', 'result.partial', 'result.final', 'result.corrected', 'result.critical', 'integration.action_required'];

/** The spec's envelope, strictly: no other field. */
const eventEnvelope = z.strictObject({
  event_id: uuid,
  type: z.enum(SPEC_EVENT_TYPES as [string, ...string[]]),
  version: z.literal(1),
  occurred_at: ts,
  environment: z.enum(['sandbox', 'production']),
  program_id: uuid,
  sequence: z.number().int().positive(),
  data: z.record(z.string(), z.unknown()),
});

const page = z.strictObject({ events: z.array(z.unknown()), next_cursor: z.string().min(1), has_more: z.boolean() });

describe('GET /v1/events: the ordered reconciliation stream', () => {
  const scene = useScene({ rateLimit: false });
  const { api, connection, fixtures: f } = scene;
  const protector = new DataProtector(randomBytes(32));

  /** One page, checked against the envelope and page shape; returns the page data. */
  async function read(client: OrdersClient, query = '') {
    const response = await client.events(query);
    const data = expectSuccess(response);
    expect(page.safeParse(data).success, response.text).toBe(true);
    expect(response.body.cursor).toBe(data.next_cursor);
    return data as { events: any[]; next_cursor: string; has_more: boolean };
  }

  async function readAll(client: OrdersClient, limit = 500) {
    const events: any[] = [];
    let cursor: string | undefined;
    for (;;) {
      const data = await read(client, `?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      events.push(...data.events);
      cursor = data.next_cursor;
      if (!data.has_more) return { events, cursor };
    }
  }

  describe('the page is the events as stored at append', () => {
    let tenant: Tenant;
    let client: OrdersClient;

    beforeAll(async () => {
      const partner = await scene.freshPartner();
      ({ tenant, client } = partner);
      for (let n = 0; n < 3; n++) expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, partner.subject)), 201);
      // Result events too: their links name several resources.
      const [{ id: orderId }] = await connection.sql<{ id: string }[]>`select id from orders where client_id = ${tenant.clientId} order by created_at limit 1`;
      expectSuccess(await api.call('POST', `/v1/sandbox/orders/${orderId}/simulate`, { key: client.key, json: { scenario: 'happy_path' } }));
    });

    const bodies = async () =>
      (await connection.sql<{ body: string | null }[]>`select body from events where client_id = ${tenant.clientId} and environment = 'sandbox' order by sequence`).map((row) => row.body);

    it('each event is written once, at append, in the bytes a page sends (events.body)', async () => {
      const stored = await bodies();
      expect(stored.length).toBeGreaterThan(5);
      const response = await client.events('?limit=100');
      expectSuccess(response);
      expect(response.text).toContain(`"data":{"events":[${stored.join(',')}],"next_cursor":`);
      expect(response.body.data.events).toEqual(stored.map((body) => JSON.parse(body!)));
    });

    it('events an earlier release wrote (no stored JSON) read byte for byte the same, beside stored ones, on both doors', async () => {
      const before = await client.events('?limit=100');
      const consoleBefore = await api.fetch('GET', `/api/trpc/events.list?input=${encodeURIComponent(JSON.stringify({ limit: 100 }))}`, { headers: { authorization: `Bearer ${client.key}` } });
      expect(before.body.data.events.some((e: { data: { links?: object } }) => Object.keys(e.data.links ?? {}).length > 1)).toBe(true);
      await connection.sql`update events set body = null where client_id = ${tenant.clientId} and environment = 'sandbox' and sequence % 2 = 0`;
      expect((await bodies()).slice(0, 3).map((body) => body === null)).toEqual([false, true, false]);
      const after = await client.events('?limit=100');
      const withoutRequestId = (text: string) => text.replace(/"request_id":"[^"]+"/, '');
      expect(withoutRequestId(after.text)).toBe(withoutRequestId(before.text));
      const consoleAfter = await api.fetch('GET', `/api/trpc/events.list?input=${encodeURIComponent(JSON.stringify({ limit: 100 }))}`, { headers: { authorization: `Bearer ${client.key}` } });
      expect(consoleAfter.status, consoleAfter.text).toBe(200);
      expect(consoleAfter.body.result.data.data).toEqual(consoleBefore.body.result.data.data);
      expect(consoleAfter.body.result.data.data.events).toEqual(after.body.data.events);
    });
  });

  describe('order.created and order.cancelled', () => {
    let tenant: Tenant;
    let client: OrdersClient;
    let order: any;
    let cancelled: any;
    let events: any[];

    beforeAll(async () => {
      const partner = await scene.freshPartner();
      ({ tenant, client } = partner);
      order = expectSuccess(
        await client.create(
          orderBody(tenant.sandbox.program, tenant.sandbox.item, partner.subject, { patient: { legal_first_name: 'Ada' }, clinical_notes: 'private', billing_mode: 'self_pay' }),
        ),
        201,
      );
      cancelled = expectSuccess(await client.cancel(order.order_id));
      events = (await read(client)).events;
    });

    it('the schema’s allow-list and event types are exactly the spec’s', () => {
      expect(Object.keys(eventDataSchema.shape).sort()).toEqual([...SPEC_DATA_KEYS].sort());
      expect([...EVENT_TYPES].sort()).toEqual([...SPEC_EVENT_TYPES].sort());
    });

    it('create then cancel emit order.created and order.cancelled, sequences 1 and 2', () => {
      expect(events.map((e) => [e.type, e.sequence])).toEqual([
        ['order.created', 1],
        ['order.cancelled', 2],
      ]);
    });

    it('each event has exactly the spec envelope: event_id, type, version 1, occurred_at, environment, program_id, sequence, data', () => {
      for (const event of events) {
        const parsed = eventEnvelope.safeParse(event);
        expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
        expect(event).toMatchObject({ version: 1, environment: 'sandbox', program_id: tenant.sandbox.program.id });
      }
      expect(new Set(events.map((e) => e.event_id)).size).toBe(events.length);
    });

    it('data holds only allow-listed keys: strictly valid against eventDataSchema and a subset of the spec list', () => {
      for (const event of events) {
        const parsed = eventDataSchema.strict().safeParse(event.data);
        expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
        for (const key of Object.keys(event.data)) expect(SPEC_DATA_KEYS, `data key ${key}`).toContain(key);
        for (const path of Object.values(event.data.links ?? {})) expect(path).toMatch(/^\/v1\//);
      }
    });

    it('data carries identifiers and coarse state of the order, matching the API', () => {
      const [created, cancel] = events;
      const common = { order_id: order.order_id, external_order_id: order.external_order_id, program_id: tenant.sandbox.program.id, client_id: tenant.clientId, environment: 'sandbox' };
      expect(created.data).toEqual({ ...common, lifecycle: 'pending', next_action: 'wait_for_laboratory', links: { order: `/v1/orders/${order.order_id}` } });
      expect(cancel.data).toEqual({ ...common, lifecycle: 'cancelled', next_action: 'none', links: { order: `/v1/orders/${order.order_id}` } });
    });

    it('occurred_at is when the fact happened: the order’s created_at, then its cancellation time', () => {
      expect(events[0].occurred_at).toBe(order.created_at);
      expect(events[1].occurred_at).toBe(cancelled.updated_at);
    });

    it('a key without events:read → 403 forbidden', async () => {
      const noEvents = ordersClient(api, await tenant.key({ scopes: ['orders:read', 'orders:write'] }));
      expectError(await noEvents.events(), 403, 'forbidden');
    });
  });

  describe('paging and cursors', () => {
    let tenant: Tenant;
    let client: OrdersClient;
    let caller: Caller;
    let subject: string;
    const TOTAL = 510;
    const extra = () => createOrderDirect(connection.db, protector, caller, orderBody(tenant.sandbox.program, tenant.sandbox.item, subject));

    beforeAll(async () => {
      ({ tenant, client, subject } = await scene.freshPartner());
      caller = await callerOf(connection.sql, client.key);
      const writers = connectDatabase(testDatabaseUrl(), { max: 8, applicationName: 'events-stream-test-writers' });
      try {
        await inParallel(TOTAL, 8, () => createOrderDirect(writers.db, protector, caller, orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)));
      } finally {
        await writers.close();
      }
    });

    it('without limit: the default page of 100, from sequence 1, has_more true', async () => {
      const data = await read(client);
      expect(data.events.map((e) => e.sequence)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      expect(data.has_more).toBe(true);
    });

    it('limit=1: one event per page, and next_cursor continues right after it', async () => {
      const first = await read(client, '?limit=1');
      expect(first.events.map((e) => e.sequence)).toEqual([1]);
      expect(first.has_more).toBe(true);
      const second = await read(client, `?limit=1&cursor=${first.next_cursor}`);
      expect(second.events.map((e) => e.sequence)).toEqual([2]);
    });

    it('limit=500: 500 events, then the remaining ones with has_more false', async () => {
      const first = await read(client, '?limit=500');
      expect(first.events.map((e) => e.sequence)).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
      expect(first.has_more).toBe(true);
      const rest = await read(client, `?limit=500&cursor=${first.next_cursor}`);
      expect(rest.events.map((e) => e.sequence)).toEqual(Array.from({ length: TOTAL - 500 }, (_, i) => i + 501));
      expect(rest.has_more).toBe(false);
    });

    it('the whole stream is the dense sequence 1..N with unique event_ids, one order.created per order', async () => {
      const { events } = await readAll(client, 37);
      expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: TOTAL }, (_, i) => i + 1));
      expect(new Set(events.map((e) => e.event_id)).size).toBe(TOTAL);
      expect(new Set(events.map((e) => e.data.order_id)).size).toBe(TOTAL);
    });

    it.each(['0', '501', '-1', '1.5', 'ten', '1e3', '100abc', '99999999999999999999'])('limit=%s → 400 invalid_request naming limit', async (limit) => {
      const error = expectError(await client.events(`?limit=${encodeURIComponent(limit)}`), 400, 'invalid_request');
      expect(error.details).toContainEqual(expect.objectContaining({ field: 'limit' }));
    });

    it.each([
      { what: 'garbage', cursor: 'not a cursor!' },
      { what: 'too long', cursor: 'A'.repeat(65), issue: 'too_long' },
      { what: 'valid base64url of something else', cursor: Buffer.from('hello').toString('base64url') },
      { what: 'a negative position', cursor: Buffer.from('seq:-1').toString('base64url') },
      { what: 'plain digits', cursor: '12' },
      { what: 'a cursor with one character changed', cursor: 'tampered' },
    ])('a bad cursor ($what) → 400 invalid_request, issue invalid_cursor', async ({ cursor, issue = 'invalid_cursor' }) => {
      if (cursor === 'tampered') {
        // The position moved by one bit: the tag no longer matches, so it is refused, not read.
        const bytes = Buffer.from((await read(client, '?limit=3')).next_cursor, 'base64url');
        bytes[16] ^= 1;
        cursor = bytes.toString('base64url');
      }
      const error = expectError(await client.events(`?cursor=${encodeURIComponent(cursor)}`), 400, 'invalid_request');
      expect(error.details).toEqual([expect.objectContaining({ field: 'cursor', issue })]);
    });

    it.each(['?cursor=', '?cursor', '?limit=', '?limit=10&cursor='])('an empty parameter (%s) → 400 naming it, never a restart from the first event', async (query) => {
      const error = expectError(await client.events(query), 400, 'invalid_request');
      expect(error.details).toContainEqual(expect.objectContaining({ field: query.includes('cursor') ? 'cursor' : 'limit', issue: 'empty_value' }));
    });

    it('an unknown query parameter → 400 invalid_request', async () => {
      expectError(await client.events('?since=0'), 400, 'invalid_request');
    });

    it('at the end: an empty page still has next_cursor; polling from it later returns only newer events', async () => {
      const { cursor } = await readAll(client);
      const empty = await read(client, `?cursor=${cursor}`);
      expect(empty).toEqual({ events: [], next_cursor: cursor, has_more: false });

      const newer = [await extra(), await extra()];
      const later = await read(client, `?cursor=${cursor}`);
      expect(later.events.map((e) => e.data.order_id)).toEqual(newer.map((o) => o.order_id));
      expect(later.events.map((e) => e.sequence)).toEqual([TOTAL + 1, TOTAL + 2]);
      expect((await read(client, `?cursor=${later.next_cursor}`)).events).toEqual([]);
    });
  });

  describe('an empty stream and isolation between streams', () => {
    it('a client with no events: empty page, has_more false, next_cursor present; polling from it later finds the first event', async () => {
      const tenant = await buildTenant(f);
      const client = ordersClient(api, await tenant.key());
      const empty = await read(client);
      expect(empty.events).toEqual([]);
      expect(empty.has_more).toBe(false);
      const subject = await client.subject();
      const order = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201);
      const later = await read(client, `?cursor=${empty.next_cursor}`);
      expect(later.events.map((e) => [e.sequence, e.type, e.data.order_id])).toEqual([[1, 'order.created', order.order_id]]);
    });

    it('other clients and environments never see each other’s events; each stream is dense from 1', async () => {
      const a = await buildTenant(f);
      const b = await buildTenant(f);
      const sibling = await f.client(a.laboratory.id);
      await f.grant(sibling.client_id, a.sandbox.program);

      const streams = [
        { name: 'A sandbox', clientId: a.clientId, environment: 'sandbox', client: ordersClient(api, await a.key()), program: a.sandbox.program, item: a.sandbox.item },
        { name: 'A production', clientId: a.clientId, environment: 'production', client: ordersClient(api, await a.key({ environment: 'production' })), program: a.production.program, item: a.production.item },
        { name: 'B sandbox', clientId: b.clientId, environment: 'sandbox', client: ordersClient(api, await b.key()), program: b.sandbox.program, item: b.sandbox.item },
        { name: 'A sibling client', clientId: sibling.client_id, environment: 'sandbox', client: ordersClient(api, await f.key(sibling.client_id, 'sandbox')), program: a.sandbox.program, item: a.sandbox.item },
      ];
      const created = new Map<string, string[]>();
      for (const [i, stream] of streams.entries()) {
        const subject = await stream.client.subject('shared-subject');
        const ids: string[] = [];
        for (let n = 0; n < i + 2; n++) {
          // The same external_order_id in every stream: it is unique per (client, environment) only.
          ids.push(expectSuccess(await stream.client.create(orderBody(stream.program, stream.item, subject, { external_order_id: `iso-${n}` })), 201).order_id);
        }
        expectSuccess(await stream.client.cancel(ids[0]));
        created.set(stream.name, ids);
      }
      for (const stream of streams) {
        const { events } = await readAll(stream.client);
        const ids = created.get(stream.name)!;
        expect(events.map((e) => e.sequence), stream.name).toEqual(Array.from({ length: ids.length + 1 }, (_, i) => i + 1));
        expect(new Set(events.map((e) => e.data.order_id)), stream.name).toEqual(new Set(ids));
        for (const event of events) {
          expect(event.environment).toBe(stream.environment);
          expect(event.data).toMatchObject({ client_id: stream.clientId, environment: stream.environment });
        }
        // Another stream's order is not even readable.
        for (const other of streams.filter((s) => s !== stream)) expectError(await stream.client.get(created.get(other.name)![0]), 404, 'not_found');
      }
    });
  });

  describe('cursors are bound to their stream (client and environment), not to the key', () => {
    let a: Tenant;
    let clientA: OrdersClient;
    let cursorA: string;

    beforeAll(async () => {
      const partner = await scene.freshPartner();
      ({ tenant: a, client: clientA } = partner);
      for (let n = 0; n < 3; n++) expectSuccess(await clientA.create(orderBody(a.sandbox.program, a.sandbox.item, partner.subject)), 201);
      cursorA = (await read(clientA, '?limit=2')).next_cursor;
    });

    it('another client’s cursor → 400 invalid_request, issue cursor_of_another_stream; nothing is skipped', async () => {
      const b = await buildTenant(f);
      const clientB = ordersClient(api, await b.key());
      const error = expectError(await clientB.events(`?cursor=${cursorA}`), 400, 'invalid_request');
      expect(error.details).toEqual([expect.objectContaining({ field: 'cursor', issue: 'cursor_of_another_stream' })]);
      // Another client of the same laboratory, granted the same program: still another stream.
      const sibling = await f.client(a.laboratory.id);
      await f.grant(sibling.client_id, a.sandbox.program);
      const siblingClient = ordersClient(api, await f.key(sibling.client_id, 'sandbox'));
      expect(expectError(await siblingClient.events(`?cursor=${cursorA}`), 400, 'invalid_request').details?.[0]?.issue).toBe('cursor_of_another_stream');
    });

    it('the console’s door (tRPC events.list) refuses another client’s cursor the same way', async () => {
      const b = await buildTenant(f);
      const input = encodeURIComponent(JSON.stringify({ cursor: cursorA, limit: 10 }));
      const response = await api.fetch('GET', `/api/trpc/events.list?input=${input}`, { headers: { authorization: `Bearer ${await b.key()}` } });
      expect(response.status, response.text).toBe(400);
      expect(response.text).toContain('cursor_of_another_stream');
      const own = await api.fetch('GET', `/api/trpc/events.list?input=${input}`, { headers: { authorization: `Bearer ${clientA.key}` } });
      expect(own.status, own.text).toBe(200);
      expect(own.body.result.data.data.events.map((e: { sequence: number }) => e.sequence)).toEqual([3]);
    });

    it('the same client’s sandbox cursor with a production key → 400 cursor_of_another_stream, and the other way round', async () => {
      const production = ordersClient(api, await a.key({ environment: 'production' }));
      expect(expectError(await production.events(`?cursor=${cursorA}`), 400, 'invalid_request').details?.[0]?.issue).toBe('cursor_of_another_stream');
      const productionCursor = (await read(production)).next_cursor;
      expect(expectError(await clientA.events(`?cursor=${productionCursor}`), 400, 'invalid_request').details?.[0]?.issue).toBe('cursor_of_another_stream');
    });

    it('a new key of the same client and environment continues from the cursor (keys rotate, the stream stays)', async () => {
      const rotated = ordersClient(api, await a.key());
      const next = await read(rotated, `?cursor=${cursorA}`);
      expect(next.events.map((e) => e.sequence)).toEqual([3]);
      expect(next.next_cursor).toBe((await read(clientA, `?cursor=${cursorA}`)).next_cursor);
    });

    it('a cursor from before the change (base64 of seq:N) → 400 cursor_format_retired, never read as a position', async () => {
      for (const legacy of ['seq:0', 'seq:2', 'seq:99999']) {
        const error = expectError(await clientA.events(`?cursor=${Buffer.from(legacy).toString('base64url')}`), 400, 'invalid_request');
        expect(error.details).toEqual([expect.objectContaining({ field: 'cursor', issue: 'cursor_format_retired' })]);
      }
    });
  });

  describe('a cursor survives restarts and holds on every replica; one ahead of the stream is refused', () => {
    const masterKey = randomBytes(32).toString('base64');
    const replicaEnv = { ...NO_RATE_LIMIT, PARTNER_ENCRYPTION_KEY: masterKey };
    const serviceProtector = new DataProtector(Buffer.from(masterKey, 'base64'));

    it('a cursor from one process reads the same page on another started with the same configured key, and on a restart', async () => {
      const tenant = await buildTenant(f);
      const key = await tenant.key();
      const first = await startTestApi(replicaEnv);
      const second = await startTestApi(replicaEnv);
      try {
        const one = ordersClient(first, key);
        const subject = await one.subject();
        for (let n = 0; n < 3; n++) expectSuccess(await one.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201);
        const cursor = (await read(one, '?limit=1')).next_cursor;
        await first.close();
        const fromReplica = expectSuccess(await ordersClient(second, key).events(`?cursor=${cursor}`));
        expect(fromReplica.events.map((e: { sequence: number }) => e.sequence)).toEqual([2, 3]);
      } finally {
        await second.close();
      }
      const restarted = await startTestApi(replicaEnv);
      try {
        const client = ordersClient(restarted, key);
        const cursor = (await read(client, '?limit=1')).next_cursor;
        expect(expectSuccess(await client.events(`?cursor=${cursor}`)).events.map((e: { sequence: number }) => e.sequence)).toEqual([2, 3]);
      } finally {
        await restarted.close();
      }
    });

    it('a genuine cursor beyond the head (the stream’s last sequence + 1, 99999) → 400 cursor_ahead_of_stream; at the head it is an empty page', async () => {
      const service = await startTestApi(replicaEnv);
      try {
        const tenant = await buildTenant(f);
        const client = ordersClient(service, await tenant.key());
        const caller = await callerOf(connection.sql, client.key);
        const stream = { clientId: caller.clientId, environment: caller.environment };
        // An empty stream: its head is 0.
        expect(expectError(await client.events(`?cursor=${encodeCursor(serviceProtector, stream, 1)}`), 400, 'invalid_request').details).toEqual([
          expect.objectContaining({ field: 'cursor', issue: 'cursor_ahead_of_stream' }),
        ]);
        const subject = await client.subject();
        for (let n = 0; n < 2; n++) expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201);
        expect(await read(client, `?cursor=${encodeCursor(serviceProtector, stream, 2)}`)).toMatchObject({ events: [], has_more: false });
        for (const ahead of [3, 99999]) {
          const error = expectError(await client.events(`?cursor=${encodeCursor(serviceProtector, stream, ahead)}`), 400, 'invalid_request');
          expect(error.details).toEqual([expect.objectContaining({ field: 'cursor', issue: 'cursor_ahead_of_stream' })]);
        }
        // A cursor minted with another master key (another deployment) is another stream's.
        const elsewhere = encodeCursor(new DataProtector(randomBytes(32)), stream, 1);
        expect(expectError(await client.events(`?cursor=${elsewhere}`), 400, 'invalid_request').details?.[0]?.issue).toBe('cursor_of_another_stream');
      } finally {
        await service.close();
      }
    });
  });
});
