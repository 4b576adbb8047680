import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '@lop/db';
import { cancelOrder, DataProtector } from '@lop/domain';
import { buildTenant, testDatabaseUrl } from '@lop/testing';
import { expectSuccess } from '../testing/expect-envelope';
import { callerOf, createOrderDirect, orderBody, ordersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

const WRITERS = 8;
const ORDERS_PER_WRITER = 200;
/** Every tenth order a writer creates, it also cancels: two event types, two kinds of transaction. */
const CANCEL_EVERY = 10;

describe('GET /v1/events under concurrent writers', () => {
  const scene = useScene({ rateLimit: false });
  const { api, connection, fixtures: f } = scene;
  const writers = connectDatabase(testDatabaseUrl(), { max: WRITERS, applicationName: 'events-concurrency-writers' });
  afterAll(() => writers.close());

  it(`${WRITERS} writers × ${ORDERS_PER_WRITER} orders while a reader follows next_cursor: every event exactly once, in order, sequences dense 1..N`, async () => {
    const tenant = await buildTenant(f);
    const client = ordersClient(api, await tenant.key());
    const caller = await callerOf(connection.sql, client.key);
    const subject = await client.subject();
    const protector = new DataProtector(randomBytes(32));

    let writing = true;
    const created: string[] = [];
    const cancelled: string[] = [];
    const write = async () => {
      for (let n = 1; n <= ORDERS_PER_WRITER; n++) {
        const order = await createOrderDirect(writers.db, protector, caller, orderBody(tenant.sandbox.program, tenant.sandbox.item, subject));
        created.push(order.order_id);
        if (n % CANCEL_EVERY === 0) {
          await cancelOrder(writers.db, caller, order.order_id);
          cancelled.push(order.order_id);
        }
      }
    };

    /** Follows the stream the way a partner does, checking every page as it arrives. */
    const follow = async (limit: number) => {
      const seen: any[] = [];
      let cursor: string | undefined;
      for (;;) {
        const done = !writing;
        const response = await client.events(`?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
        const page = expectSuccess(response);
        for (const event of page.events) {
          // Dense and in order at every moment: the next event is always the one after the last seen.
          expect(event.sequence).toBe(seen.length + 1);
          seen.push(event);
        }
        expect(page.events.length).toBeLessThanOrEqual(limit);
        cursor = page.next_cursor;
        if (done && !page.has_more) return seen;
        if (page.events.length < limit) await sleep(20);
      }
    };

    const reader = follow(100);
    await Promise.all(Array.from({ length: WRITERS }, write));
    writing = false;
    const seen = await reader;

    const total = WRITERS * ORDERS_PER_WRITER + cancelled.length;
    expect(created).toHaveLength(WRITERS * ORDERS_PER_WRITER);
    expect(seen.map((e) => e.sequence)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(new Set(seen.map((e) => e.event_id)).size).toBe(total);

    const createdEvents = seen.filter((e) => e.type === 'order.created').map((e) => e.data.order_id);
    const cancelledEvents = seen.filter((e) => e.type === 'order.cancelled').map((e) => e.data.order_id);
    expect(createdEvents.sort()).toEqual([...created].sort());
    expect(cancelledEvents.sort()).toEqual([...cancelled].sort());
    // A cancellation is always after its creation in the stream.
    const position = new Map(seen.filter((e) => e.type === 'order.created').map((e) => [e.data.order_id, e.sequence]));
    for (const event of seen.filter((e) => e.type === 'order.cancelled')) expect(event.sequence).toBeGreaterThan(position.get(event.data.order_id)!);

    // What the reader saw is what is stored: no event the stream skipped.
    const [{ n }] = await connection.sql`select count(*)::int as n from events where client_id = ${tenant.clientId} and environment = 'sandbox'`;
    expect(n).toBe(total);
    // About 10 s on a quiet two-core machine: the writers are bound by the Node process's CPU.
  }, 90_000);
});
