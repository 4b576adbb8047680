import { PARTNER_BASE_PATH } from '@lop/contract';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectFixtures, startTestApi, type TestApi, type TestResponse } from '../testing/harness';
import { buildTenant, fixtures, testDatabaseUrl, type Tenant } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { killAllApiProcesses, startApiProcess } from '../testing/api-process';
import { NO_RATE_LIMIT, orderBody, ordersClient, type OrdersClient } from '../testing/orders';

/**
 * GET /v1/events?wait=N (docs/events.md § Waiting for the next event): an empty page is held until
 * a commit to the caller's stream wakes it (LISTEN/NOTIFY), or answered empty at the deadline; the
 * held reads are capped per stream and per process. Timing asserts are generous: "well before the
 * deadline", never a tight bound.
 */
describe('GET /v1/events?wait: waiting for the next event', () => {
  const connection = connectFixtures();
  const f = fixtures(connection.db);

  afterAll(() => connection.close());

  interface Reader {
    tenant: Tenant;
    client: OrdersClient;
    subject: string;
    /** The stream's head: reading from it finds nothing until the next event. */
    head(): Promise<string>;
    create(): Promise<void>;
  }

  async function readerOf(api: TestApi): Promise<Reader> {
    const tenant = await buildTenant(f);
    const client = ordersClient(api, await tenant.key());
    const subject = await client.subject();
    return {
      tenant,
      client,
      subject,
      async head() {
        let cursor = '';
        for (;;) {
          const data = expectSuccess(await client.events(`?limit=500${cursor ? `&cursor=${cursor}` : ''}`));
          cursor = data.next_cursor;
          if (!data.has_more) return cursor;
        }
      },
      async create() {
        expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201);
      },
    };
  }

  /** A read started now, with how long it took once answered. */
  function timed(request: Promise<TestResponse>) {
    const started = Date.now();
    let settled = false;
    const answer = request.then((response) => {
      settled = true;
      return { response, ms: Date.now() - started };
    });
    return { answer, settled: () => settled };
  }

  describe('one API process with the default caps', () => {
    let api: TestApi;
    let reader: Reader;

    beforeAll(async () => {
      api = await startTestApi(NO_RATE_LIMIT);
      reader = await readerOf(api);
      await reader.create();
    });
    afterAll(() => api?.close());

    it('answers as soon as an event past the cursor commits, well before the deadline, with that event', async () => {
      const cursor = await reader.head();
      const read = timed(reader.client.events(`?cursor=${cursor}&wait=25`));
      // Created while the read waits (or just before it registered: either way it must come back with it).
      await reader.create();
      const { response, ms } = await read.answer;
      const data = expectSuccess(response);
      expect(data.events.map((e: any) => e.type)).toEqual(['order.created']);
      expect(ms).toBeLessThan(15_000);
    });

    it('answers empty at the deadline, with a next_cursor that continues the stream', async () => {
      const cursor = await reader.head();
      const { response, ms } = await timed(reader.client.events(`?cursor=${cursor}&wait=1`)).answer;
      const data = expectSuccess(response);
      expect(data.events).toEqual([]);
      expect(data.has_more).toBe(false);
      expect(response.body.cursor).toBe(data.next_cursor);
      expect(ms).toBeGreaterThanOrEqual(900);
      await reader.create();
      const next = expectSuccess(await reader.client.events(`?cursor=${data.next_cursor}`));
      expect(next.events.map((e: any) => e.type)).toEqual(['order.created']);
    });

    it('a page with events is answered at once, whatever the wait', async () => {
      const { response, ms } = await timed(reader.client.events('?wait=30&limit=1')).answer;
      const data = expectSuccess(response);
      expect(data.events).toHaveLength(1);
      expect(data.has_more).toBe(true);
      expect(ms).toBeLessThan(15_000);
    });

    it('wait takes 0 to 30 in plain decimal digits: 30 is accepted, 31, -1, 1.5 and 0x1 are 400 and wait for nothing', async () => {
      expectSuccess(await reader.client.events('?wait=0'));
      expectSuccess(await reader.client.events('?wait=30&limit=1'));
      const tooLarge = expectError(await reader.client.events('?wait=31'), 400, 'invalid_request');
      expect(tooLarge.details).toEqual([expect.objectContaining({ field: 'wait', issue: 'too_large' })]);
      for (const value of ['-1', '1.5', '0x1', '05', ' 1']) {
        const refused = expectError(await reader.client.events(`?wait=${encodeURIComponent(value)}`), 400, 'invalid_request');
        expect(refused.details, value).toEqual([expect.objectContaining({ field: 'wait', issue: 'invalid_format' })]);
      }
    });

    it('a bad cursor is refused at once, before any wait', async () => {
      const { response, ms } = await timed(reader.client.events('?cursor=not-a-cursor&wait=30')).answer;
      const error = expectError(response, 400, 'invalid_request');
      expect(error.details?.[0]).toMatchObject({ field: 'cursor', issue: 'invalid_cursor' });
      expect(ms).toBeLessThan(15_000);
    });

    it("a waiter sees only its own stream: another client's events neither answer it nor appear in its page", async () => {
      const other = await readerOf(api);
      const cursor = await reader.head();
      const read = timed(reader.client.events(`?cursor=${cursor}&wait=2`));
      await other.create();
      await other.create();
      const { response } = await read.answer;
      expect(expectSuccess(response).events).toEqual([]);
    });

    it('an event committed while the LISTEN connection was cut is still delivered (the reconnect wakes every waiter)', async () => {
      const cursor = await reader.head();
      const read = timed(reader.client.events(`?cursor=${cursor}&wait=25`));
      // Cut the listener (postgres.js reconnects it) and commit at once, while it may still be away.
      const cut = await connection.sql<{ pid: number }[]>`
        select pg_terminate_backend(pid), pid from pg_stat_activity
        where datname = current_database() and application_name = 'partner-api' and query ilike 'listen%'`;
      expect(cut.length).toBeGreaterThan(0);
      await reader.create();
      const { response, ms } = await read.answer;
      expect(expectSuccess(response).events.map((e: any) => e.type)).toEqual(['order.created']);
      expect(ms).toBeLessThan(20_000);
    });
  });

  describe('caps: 2 waiting reads per stream, 4 per process', () => {
    let api: TestApi;

    beforeAll(async () => {
      api = await startTestApi({ ...NO_RATE_LIMIT, PARTNER_EVENTS_WAITING_PER_CLIENT: '2', PARTNER_EVENTS_WAITING_MAX: '4' });
    });
    afterAll(() => api?.close());

    /** Three reads of the stream at once: two wait (the cap), one is refused 429 at once; returns the two. */
    async function fill(reader: Reader, cursor: string) {
      const reads = [0, 1, 2].map(() => timed(reader.client.events(`?cursor=${cursor}&wait=20`)));
      const refused = await Promise.race(reads.map((r, i) => r.answer.then(() => i)));
      const { response } = await reads[refused].answer;
      const error = expectError(response, 429, 'rate_limited');
      expect(error.details).toEqual([expect.objectContaining({ field: 'wait', issue: 'too_many_waiting_reads' })]);
      expect(response.headers.get('retry-after')).toBe('5');
      return reads.filter((_, i) => i !== refused);
    }

    it('past its stream cap a read is 429 too_many_waiting_reads at once, while other streams still wait; past the process cap too (Retry-After 1); a page with events is never refused', async () => {
      const [a, b, c] = [await readerOf(api), await readerOf(api), await readerOf(api)];
      const [headA, headB, headC] = [await a.head(), await b.head(), await c.head()];
      const heldA = await fill(a, headA);

      // Another stream waits and is woken as usual while A holds its maximum.
      const readB = timed(b.client.events(`?cursor=${headB}&wait=20`));
      await b.create();
      const answeredB = await readB.answer;
      expect(expectSuccess(answeredB.response).events).toHaveLength(1);
      expect(answeredB.ms).toBeLessThan(15_000);
      expect(heldA.every((r) => !r.settled())).toBe(true);

      // B fills its cap too: 4 reads wait in the process, so C's read is refused though C waits for nothing.
      const cursorB = expectSuccess(answeredB.response).next_cursor;
      const heldB = await fill(b, cursorB);
      const refusedC = await c.client.events(`?cursor=${headC}&wait=20`);
      expect(expectError(refusedC, 429, 'rate_limited').details?.[0]).toMatchObject({ issue: 'too_many_waiting_reads' });
      expect(refusedC.headers.get('retry-after')).toBe('1');
      // A read with events to answer never waits, so is never refused.
      await c.create();
      expect(expectSuccess(await c.client.events(`?cursor=${headC}&wait=20`)).events).toHaveLength(1);

      // Each held read is answered with its own stream's event, and its place is given back.
      await a.create();
      await b.create();
      for (const held of [...heldA, ...heldB]) expect(expectSuccess((await held.answer).response).events).toHaveLength(1);
      const cursorC = await c.head();
      const readC = timed(c.client.events(`?cursor=${cursorC}&wait=20`));
      await c.create();
      expect(expectSuccess((await readC.answer).response).events).toHaveLength(1);
    });

    it('a client that goes away gives its place back at once', async () => {
      const reader = await readerOf(api);
      const cursor = await reader.head();
      const hold = () => {
        const abort = new AbortController();
        const read = timed(
          fetch(`${api.url}${PARTNER_BASE_PATH}/v1/events?cursor=${cursor}&wait=20`, { headers: { authorization: `Bearer ${reader.client.key}` }, signal: abort.signal }).then(
            (response) => ({ status: response.status }) as TestResponse,
            () => ({ status: 0 }) as TestResponse,
          ),
        );
        return { abort, ...read };
      };
      for (let round = 0; round < 3; round++) {
        let held = [hold(), hold()];
        // Both are held once a third read is refused; a probe that came first took a place and
        // the held read refused instead is sent again.
        while ((await reader.client.events(`?cursor=${cursor}&wait=1`)).status !== 429) held = held.map((read) => (read.settled() ? hold() : read));
        for (const read of held) read.abort.abort();
        await Promise.all(held.map((read) => read.answer));
      }
      // Six reads left, none answered: the stream has its places again.
      const read = timed(reader.client.events(`?cursor=${cursor}&wait=20`));
      await reader.create();
      expect(expectSuccess((await read.answer).response).events).toHaveLength(1);
    });
  });

  describe('shutdown', () => {
    afterEach(() => killAllApiProcesses());

    it('SIGTERM answers waiting reads with their empty page at once, and the process exits 0', { timeout: 90_000 }, async () => {
      const api = await startApiProcess(testDatabaseUrl(), { PARTNER_EVENTS_WAITING_PER_CLIENT: '1' });
      const tenant = await buildTenant(f);
      const key = await tenant.key();
      const first = await api.call('GET', '/v1/events', { key });
      expect(first.status, first.text).toBe(200);
      const cursor = first.body.data.next_cursor;
      const hold = () => timed(api.call('GET', `/v1/events?cursor=${cursor}&wait=30`, { key }));
      let held = hold();
      // Held once a second read of the stream is refused (its cap is 1); should the probe have come
      // first and taken the place, the held read was the one refused: hold again.
      for (;;) {
        if ((await api.call('GET', `/v1/events?cursor=${cursor}&wait=1`, { key })).status === 429) break;
        if (held.settled()) held = hold();
      }
      const started = Date.now();
      api.child.kill('SIGTERM');
      const { response } = await held.answer;
      expect(response.status, response.text).toBe(200);
      expect(response.body.data.events).toEqual([]);
      expect(Date.now() - started).toBeLessThan(20_000);
      expect((await api.exited).code).toBe(0);
    });
  });
});
