import { beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestResponse } from '../testing/harness';
import { unique, untilNotBusy } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { holdStream, NO_RATE_LIMIT, orderBody, ordersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

describe('POST /v1/orders is idempotent per (API client, environment, Idempotency-Key)', () => {
  // holdStream keeps a create waiting on a row lock for seconds: longer than the default lock_timeout.
  const scene = useScene({ rateLimit: false, env: { PARTNER_DB_LOCK_TIMEOUT_SECONDS: '30' }, client: true });
  const { api, tenant, client, sql, fixtures: f } = scene;
  const body = (overrides: Record<string, unknown> = {}) => orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject, overrides);

  beforeAll(async () => {
    // A client with history: its sandbox stream and earlier orders exist (the counter row is what some tests lock).
    for (let i = 0; i < 20; i++) expectSuccess(await client.create(body()), 201);
  });

  const orderCount = async (clientId = tenant.clientId) => Number((await sql`select count(*)::int as n from orders where client_id = ${clientId}`)[0].n);
  const eventCount = async () => Number((await sql`select count(*)::int as n from events where client_id = ${tenant.clientId}`)[0].n);
  const keyRow = async (key: string) => (await sql`select state, request_hash, locked_until > now() as leased from idempotency_keys where client_id = ${tenant.clientId} and key = ${key}`)[0];

  function expectReplayOf(replay: TestResponse, original: TestResponse) {
    const data = expectSuccess(replay, 201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.request_id).toBe(replay.headers.get('x-request-id'));
    expect(replay.body.request_id).not.toBe(original.body.request_id);
    expect(data).toEqual(original.body.data);
    return data;
  }

  function expectConflict(response: TestResponse, issue: string) {
    const error = expectError(response, 409, 'conflict');
    expect(error.details![0].issue).toBe(issue);
    return error;
  }

  it('same key and same body → 201 with the original order, Idempotent-Replayed: true, and nothing new stored', async () => {
    const idempotencyKey = unique('idem');
    const request = body({ clinical_notes: 'replay me', aoe_answers: [] });
    const original = await client.create(request, { idempotencyKey });
    expectSuccess(original, 201);
    expect(original.headers.get('idempotent-replayed')).toBeNull();
    const [orders, events] = [await orderCount(), await eventCount()];

    expectReplayOf(await client.create(request, { idempotencyKey }), original);
    expectReplayOf(await client.create(request, { idempotencyKey }), original);
    expect([await orderCount(), await eventCount()]).toEqual([orders, events]);
  });

  it('the same body with its keys in another order (and other whitespace) is the same body', async () => {
    const idempotencyKey = unique('idem');
    const request = body({ patient: { legal_first_name: 'Ada', legal_last_name: 'Byron' }, ordering_provider: { name: 'Dr. Hopper', npi: '1234567893' } });
    const original = await client.create(request, { idempotencyKey });
    expectSuccess(original, 201);

    const reversed = Object.fromEntries(
      Object.entries(request)
        .reverse()
        .map(([k, v]) => [k, v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).reverse()) : v]),
    );
    expect(JSON.stringify(reversed)).not.toBe(JSON.stringify(request));
    expectReplayOf(await client.create(reversed, { idempotencyKey }), original);

    const spaced = await api.call('POST', '/v1/orders', {
      key: client.key,
      rawBody: JSON.stringify(reversed, null, 4),
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    });
    expectReplayOf(spaced, original);
  });

  it('a replay answers the original response even after the order has moved on', async () => {
    const idempotencyKey = unique('idem');
    const request = body();
    const original = await client.create(request, { idempotencyKey });
    expectSuccess(await client.cancel(original.body.data.order_id));
    expect(expectReplayOf(await client.create(request, { idempotencyKey }), original).lifecycle).toBe('pending');
  });

  it('another key of the same client and environment replays too: the scope is the client, not the key', async () => {
    const idempotencyKey = unique('idem');
    const request = body();
    const original = await client.create(request, { idempotencyKey });
    const sibling = ordersClient(api, await tenant.key());
    expectReplayOf(await sibling.create(request, { idempotencyKey }), original);
  });

  it.each([
    { what: 'another external_order_id', change: () => ({ external_order_id: unique('ext') }) },
    { what: 'an added optional field', change: () => ({ clinical_notes: 'now with notes' }) },
    { what: 'a changed personal field', change: () => ({ patient: { legal_first_name: 'Eve' } }) },
  ])('same key with a different body ($what) → 409 conflict idempotency_key_reused, nothing created', async ({ change }) => {
    const idempotencyKey = unique('idem');
    const request = body({ patient: { legal_first_name: 'Ada' } });
    const original = await client.create(request, { idempotencyKey });
    expectSuccess(original, 201);
    const before = await orderCount();
    expectConflict(await client.create({ ...request, ...change() }, { idempotencyKey }), 'idempotency_key_reused');
    expect(await orderCount()).toBe(before);
    // The key still answers its original body.
    expectReplayOf(await client.create(request, { idempotencyKey }), original);
  });

  const settledWithin = async (promise: Promise<unknown>, ms: number) =>
    Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), ms))]);

  it('same key and same body while the first request is still running → waits for it, then 201 with its order and Idempotent-Replayed: true', async () => {
    const idempotencyKey = unique('idem');
    const request = body();
    const before = await orderCount();
    const stream = await holdStream(sql, tenant.clientId);
    let first: Promise<TestResponse> | undefined;
    let second: Promise<TestResponse> | undefined;
    try {
      first = client.create(request, { idempotencyKey });
      await stream.blocking();
      // Owned by the first request's transaction: nothing about it is visible until it commits.
      expect(await keyRow(idempotencyKey)).toBeUndefined();
      second = client.create(request, { idempotencyKey });
      // Still waiting (not answered 409) while the first is held; and it holds no row lock of its own.
      expect(await settledWithin(second, 400)).toBe(false);
      await stream.blocking(1);
    } finally {
      await stream.release();
    }
    const original = await first!;
    expectSuccess(original, 201);
    expect(original.headers.get('idempotent-replayed')).toBeNull();
    expectReplayOf(await second!, original);
    expect(await orderCount()).toBe(before + 1);
    expect(await keyRow(idempotencyKey)).toMatchObject({ state: 'completed' });
  });

  it('same key with a different body while the first request is still running → waits for it, then 409 idempotency_key_reused', async () => {
    const idempotencyKey = unique('idem');
    const request = body();
    const stream = await holdStream(sql, tenant.clientId);
    let first: Promise<TestResponse> | undefined;
    let different: Promise<TestResponse> | undefined;
    try {
      first = client.create(request, { idempotencyKey });
      await stream.blocking();
      different = client.create(body(), { idempotencyKey });
      // The first may yet fail and leave the key free: the answer waits for its outcome.
      expect(await settledWithin(different, 400)).toBe(false);
    } finally {
      await stream.release();
    }
    expectSuccess(await first!, 201);
    expectConflict(await different!, 'idempotency_key_reused');
  });

  it('a wait that runs out (PARTNER_IDEMPOTENCY_WAIT_SECONDS) → 409 idempotency_key_in_flight with Retry-After; the first still completes once', async () => {
    const impatient = await startTestApi({ ...NO_RATE_LIMIT, PARTNER_IDEMPOTENCY_WAIT_SECONDS: '0.3' });
    try {
      const idempotencyKey = unique('idem');
      const request = body();
      const before = await orderCount();
      const stream = await holdStream(sql, tenant.clientId);
      let first: Promise<TestResponse> | undefined;
      try {
        first = client.create(request, { idempotencyKey });
        await stream.blocking();
        const started = Date.now();
        const timedOut = await ordersClient(impatient, client.key).create(request, { idempotencyKey });
        const waited = Date.now() - started;
        const error = expectConflict(timedOut, 'idempotency_key_in_flight');
        expect(error.message).toMatch(/still being processed/);
        expect(Number(timedOut.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(waited).toBeGreaterThanOrEqual(300);
        expect(waited).toBeLessThan(2_000);
      } finally {
        await stream.release();
      }
      const original = await first!;
      expectSuccess(original, 201);
      expect(await orderCount()).toBe(before + 1);
      expectReplayOf(await ordersClient(impatient, client.key).create(request, { idempotencyKey }), original);
    } finally {
      await impatient.close();
    }
  });

  /**
   * Owns `idempotencyKey` as a create's transaction on another replica would: its advisory lock,
   * held until `finish(writeRow)` commits (writing the key's row first, when given).
   */
  async function ownKey(idempotencyKey: string) {
    let finish!: (write?: (tx: typeof sql) => Promise<unknown>) => void;
    const finished = new Promise<((tx: typeof sql) => Promise<unknown>) | undefined>((resolve) => (finish = resolve));
    let owned!: () => void;
    const ownedNow = new Promise<void>((resolve) => (owned = resolve));
    const owner = sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtext(${tenant.clientId} || ':sandbox'), hashtext(${idempotencyKey}))`;
      owned();
      const write = await finished;
      if (write) await write(tx as unknown as typeof sql);
    });
    await ownedNow;
    return { finish: async (write?: (tx: typeof sql) => Promise<unknown>) => (finish(write), await owner) };
  }

  it('a waiter finds the outcome in PostgreSQL when the first request runs on another replica (no in-process wake-up)', async () => {
    // The response of a completed key with this body, then the same body owned under a second
    // key as another replica's transaction would own it, committing that response.
    const request = body();
    const done = unique('idem');
    const original = await client.create(request, { idempotencyKey: done });
    expectSuccess(original, 201);
    const idempotencyKey = unique('idem');
    const other = await ownKey(idempotencyKey);
    const waiting = client.create(request, { idempotencyKey });
    expect(await settledWithin(waiting, 500)).toBe(false);
    await other.finish(
      (tx) => tx`insert into idempotency_keys (client_id, environment, key, request_hash, state, locked_until, response_status, response_data)
                 select client_id, environment, ${idempotencyKey}, request_hash, 'completed', now(), response_status, response_data
                 from idempotency_keys where client_id = ${tenant.clientId} and key = ${done}`,
    );
    const started = Date.now();
    expectReplayOf(await waiting, original);
    // Found at the next read: reads back off to at most 200 ms apart.
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('a key owned by a request still running when the wait runs out → 409 idempotency_key_in_flight with Retry-After, and nothing created', async () => {
    const impatient = await startTestApi({ ...NO_RATE_LIMIT, PARTNER_IDEMPOTENCY_WAIT_SECONDS: '0.3' });
    const idempotencyKey = unique('idem');
    const other = await ownKey(idempotencyKey);
    try {
      const request = body();
      const response = await ordersClient(impatient, client.key).create(request, { idempotencyKey });
      expectConflict(response, 'idempotency_key_in_flight');
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await sql`select 1 from orders where external_order_id = ${request.external_order_id}`).toHaveLength(0);
    } finally {
      await other.finish();
      await impatient.close();
    }
  });

  it('the moment the request owning a key ends without an order (rolled back, connection killed, database restarted), the key is free: 201', async () => {
    const idempotencyKey = unique('idem');
    const other = await ownKey(idempotencyKey);
    const request = body();
    const waiting = client.create(request, { idempotencyKey });
    expect(await settledWithin(waiting, 300)).toBe(false);
    await other.finish(); // commits nothing about the key: as a rollback or a dead session would
    const created = await waiting;
    expectSuccess(created, 201);
    expect(created.headers.get('idempotent-replayed')).toBeNull();
  });

  it('an in_flight row an earlier release left behind (a lease, no transaction owning it) does not hold the key: 201 and the key completes', async () => {
    const idempotencyKey = unique('idem');
    await sql`insert into idempotency_keys (client_id, environment, key, request_hash, state, locked_until)
              values (${tenant.clientId}, 'sandbox', ${idempotencyKey}, 'crashed-process', 'in_flight', now() + interval '1 minute')`;
    const request = body();
    const taken = await client.create(request, { idempotencyKey });
    expectSuccess(taken, 201);
    expect(taken.headers.get('idempotent-replayed')).toBeNull();
    const row = await keyRow(idempotencyKey);
    expect(row.state).toBe('completed');
    expect(row.request_hash).not.toBe('crashed-process');
    expectReplayOf(await client.create(request, { idempotencyKey }), taken);
  });

  it.each([10, 50])('%i concurrent identical requests → exactly one order and one event; all 201, one original and the rest Idempotent-Replayed', async (n) => {
    const idempotencyKey = unique('idem');
    const request = body();
    const [orders, events] = [await orderCount(), await eventCount()];
    const started = performance.now();
    const responses = await Promise.all(Array.from({ length: n }, () => client.create(request, { idempotencyKey })));
    const elapsed = performance.now() - started;

    for (const response of responses) expect(response.status, response.text).toBe(201);
    expect(new Set(responses.map((r) => expectSuccess(r, 201).order_id)).size).toBe(1);
    expect(responses.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(n - 1);
    expect([await orderCount(), await eventCount()]).toEqual([orders + 1, events + 1]);
    console.log(`${n} concurrent identical POST /v1/orders: all answered in ${elapsed.toFixed(0)} ms`);
  });

  it('the console door (tRPC orders.create with the Idempotency-Key header): 10 concurrent identical calls → one order, one original and nine replays', async () => {
    const idempotencyKey = unique('idem');
    const request = body();
    const before = await orderCount();
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => api.fetch('POST', '/api/trpc/orders.create', { json: request, headers: { authorization: `Bearer ${client.key}`, 'idempotency-key': idempotencyKey } })),
    );
    for (const response of responses) expect(response.status, response.text).toBe(200);
    expect(new Set(responses.map((r) => r.body.result.data.data.order_id)).size).toBe(1);
    expect(responses.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(await orderCount()).toBe(before + 1);
    // And the same key over REST replays that order.
    const rest = await client.create(request, { idempotencyKey });
    expect(expectSuccess(rest, 201).order_id).toBe(responses[0].body.result.data.data.order_id);
    expect(rest.headers.get('idempotent-replayed')).toBe('true');
  });

  it('the console door: a different body while the first is in flight waits for it → 409 idempotency_key_reused', async () => {
    const idempotencyKey = unique('idem');
    const stream = await holdStream(sql, tenant.clientId);
    let first: Promise<TestResponse> | undefined;
    let console: Promise<TestResponse> | undefined;
    try {
      first = client.create(body(), { idempotencyKey });
      await stream.blocking();
      console = api.fetch('POST', '/api/trpc/orders.create', { json: body(), headers: { authorization: `Bearer ${client.key}`, 'idempotency-key': idempotencyKey } });
      expect(await settledWithin(console, 400)).toBe(false);
    } finally {
      await stream.release();
    }
    expectSuccess(await first!, 201);
    const response = await console!;
    expect(response.status, response.text).toBe(409);
    expect(response.body.error.data.partner.error.details[0].issue).toBe('idempotency_key_reused');
  });

  describe('a first attempt that created no order binds nothing (docs/idempotency.md)', () => {
    it('422: the same key with a corrected body → 201 and a new order; from then on the key is bound to that body', async () => {
      const idempotencyKey = unique('idem');
      const refused = body({ external_subject_id: unique('unregistered') });
      expectError(await client.create(refused, { idempotencyKey }), 422, 'not_orderable');
      expect(await keyRow(idempotencyKey)).toBeUndefined();

      const corrected = { ...refused, external_subject_id: scene.subject };
      const created = await client.create(corrected, { idempotencyKey });
      expectSuccess(created, 201);
      expect(created.headers.get('idempotent-replayed')).toBeNull();
      // The key has produced an order: the spec's "key seen before" rows hold.
      expectReplayOf(await client.create(corrected, { idempotencyKey }), created);
      expectConflict(await client.create(refused, { idempotencyKey }), 'idempotency_key_reused');
    });

    it('422: the same key and the same body once the cause is fixed → 201 and the order (not a replay of the 422)', async () => {
      const idempotencyKey = unique('idem');
      const laterSubject = unique('subject');
      const request = body({ external_subject_id: laterSubject });
      expectError(await client.create(request, { idempotencyKey }), 422, 'not_orderable');
      await client.subject(laterSubject);
      const created = await client.create(request, { idempotencyKey });
      expectSuccess(created, 201);
      expect(created.headers.get('idempotent-replayed')).toBeNull();
      expectReplayOf(await client.create(request, { idempotencyKey }), created);
    });

    it('10 concurrent identical requests that are not orderable → ten 422, no order, the key left free', async () => {
      const idempotencyKey = unique('idem');
      const request = body({ external_subject_id: unique('unregistered') });
      const before = await orderCount();
      const responses = await Promise.all(Array.from({ length: 10 }, () => client.create(request, { idempotencyKey })));
      for (const response of responses) expectError(response, 422, 'not_orderable');
      expect(await orderCount()).toBe(before);
      expect(await keyRow(idempotencyKey)).toBeUndefined();
    });
  });

  it('50 concurrent requests with different keys and one external_order_id → one order; the rest 409 duplicate_external_order_id', async () => {
    const request = body();
    const before = await orderCount();
    // As a partner would: a 429 (more writes of this client at once than a loaded machine lets
    // through) created nothing, and is retried with the same key after its Retry-After.
    const createAnswered = async () => {
      const idempotencyKey = unique('idem');
      return untilNotBusy(() => client.create(request, { idempotencyKey }));
    };
    const responses = await Promise.all(Array.from({ length: 50 }, createAnswered));
    expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
    for (const response of responses.filter((r) => r.status !== 201)) expectConflict(response, 'duplicate_external_order_id');
    expect(await orderCount()).toBe(before + 1);
  });

  it('duplicate external_order_id under another key → 409 duplicate_external_order_id, and that key stays free', async () => {
    const request = body();
    expectSuccess(await client.create(request), 201);
    const idempotencyKey = unique('idem');
    expectConflict(await client.create({ ...request, clinical_notes: 'second attempt' }, { idempotencyKey }), 'duplicate_external_order_id');
    expect(await keyRow(idempotencyKey)).toBeUndefined();
    expectSuccess(await client.create(body(), { idempotencyKey }), 201);
  });

  it('the same key from another API client (same program, same body) creates that client’s own order', async () => {
    const second = await f.client(tenant.laboratory.id);
    await f.grant(second.client_id, tenant.sandbox.program);
    const secondClient = ordersClient(api, await f.key(second.client_id, 'sandbox'));
    await secondClient.subject(scene.subject);

    const idempotencyKey = unique('idem');
    const request = body();
    const mine = expectSuccess(await client.create(request, { idempotencyKey }), 201);
    const theirs = await secondClient.create(request, { idempotencyKey });
    expect(expectSuccess(theirs, 201).order_id).not.toBe(mine.order_id);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(await orderCount(second.client_id)).toBe(1);
    // external_order_id is unique per client too, not globally.
    expect(theirs.body.data.external_order_id).toBe(mine.external_order_id);
  });

  it('the same key in the production environment of the same client creates a production order', async () => {
    const production = ordersClient(api, await tenant.key({ environment: 'production' }));
    const productionSubject = await production.subject(scene.subject);
    const idempotencyKey = unique('idem');
    const externalOrderId = unique('ext');
    const sandboxOrder = expectSuccess(await client.create(body({ external_order_id: externalOrderId }), { idempotencyKey }), 201);
    const response = await production.create(orderBody(tenant.production.program, tenant.production.item, productionSubject, { external_order_id: externalOrderId }), { idempotencyKey });
    const productionOrder = expectSuccess(response, 201);
    expect(response.headers.get('idempotent-replayed')).toBeNull();
    expect(productionOrder).toMatchObject({ environment: 'production', external_order_id: externalOrderId });
    expect(productionOrder.order_id).not.toBe(sandboxOrder.order_id);
  });
});
