import { randomBytes } from 'node:crypto';
import { SCOPES } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase, sqlOf } from '@lop/db';
import { createKey } from '../control-plane/control-plane';
import { eventsOf, newOrder, openTestDatabase, orderUpdatedDraft } from '../../testing/orders';
import type { OrderRow } from '../orders/order-resource';
import { DataProtector } from '../security/protector';
import { openDeliveryQueue, type DeliveryQueue } from './delivery-queue';
import { appendEvents, attachDeliveryQueue } from './outbox';
import { createSubscription } from './subscriptions';

const connection = openTestDatabase();
const { db, sql } = connection;
let queue: DeliveryQueue;
let detach: () => void;
beforeAll(async () => {
  queue = await openDeliveryQueue({ databaseUrl: inject('databaseUrl'), settings: { attemptTimeoutSeconds: 5, pollIntervalSeconds: 1, historyRetentionSeconds: 86_400 }, role: 'sender', applicationName: 'outbox-order-test' });
  detach = attachDeliveryQueue(queue);
});
afterAll(async () => {
  detach();
  await queue.boss.stop({ graceful: false });
  await connection.close();
});

const draft = (order: OrderRow) => orderUpdatedDraft(order, 'outbox-order');

async function subscribedOrder() {
  const { order } = await newOrder(db);
  await createKey(db, { clientId: order.clientId, environment: 'sandbox', scopes: [...SCOPES] });
  await createSubscription(db, new DataProtector(randomBytes(32)), { clientId: order.clientId, environment: 'sandbox', url: 'http://127.0.0.1:9/hooks', eventTypes: ['order.updated'] }, { allowLoopback: true, servicePorts: [] });
  return { order, stream: { clientId: order.clientId, environment: order.environment } };
}

describe("a stream's counter row is held only for the numbering and the commit", () => {
  it('a second writer of the stream writes its deliveries and jobs while the first holds the counter, and waits only to be numbered', async () => {
    const { order, stream } = await subscribedOrder();
    const before = (await eventsOf(db, order)).length;
    // Writer A appends and keeps its transaction open: it holds the counter row.
    let releaseA!: () => void;
    const heldA = new Promise<void>((resolve) => (releaseA = resolve));
    let appendedA!: () => void;
    const hasAppendedA = new Promise<void>((resolve) => (appendedA = resolve));
    const writerA = db.transaction(async (tx) => {
      await appendEvents(tx, stream, [draft(order)]);
      appendedA();
      await heldA;
    });
    await hasAppendedA;
    // Writer B, on its own named connection, so its locks can be read from pg_locks.
    const other = connectDatabase(inject('databaseUrl'), { max: 1, applicationName: 'outbox-order-writer-b' });
    try {
      const writerB = other.db.transaction((tx) => appendEvents(tx, stream, [draft(order)]));
      const waiting = async () =>
        (await sql<{ query: string; tables: string[] }[]>`
          select a.query, array(select c.relname::text from pg_locks l join pg_class c on c.oid = l.relation where l.pid = a.pid and l.granted and l.mode = 'RowExclusiveLock' and c.relkind in ('r', 'p') order by 1) as tables
          from pg_stat_activity a where a.application_name = 'outbox-order-writer-b' and a.wait_event_type = 'Lock'`)[0];
      await expect.poll(waiting, { timeout: 10_000, interval: 20 }).toBeTruthy();
      const b = await waiting();
      // B waits at the counter, having already written its deliveries and their pg-boss job.
      expect(b.query).toMatch(/insert into event_streams/);
      expect(b.tables).toContain('webhook_deliveries');
      expect(b.tables.filter((table) => table.startsWith('job')), 'pg-boss job table (or its partition)').not.toEqual([]);
      expect(b.tables).not.toContain('events');
      releaseA();
      await Promise.all([writerA, writerB]);
    } finally {
      releaseA();
      await other.close();
    }
    const after = await eventsOf(db, order);
    expect(after.map((e) => Number(e.sequence))).toEqual(Array.from({ length: before + 2 }, (_, i) => i + 1));
    const deliveries = await sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries d join events e on e.id = d.event_id where e.order_id = ${order.id} and e.sequence > ${before}`;
    expect(deliveries[0].n).toBe(2);
  });

  it('deliveries and their events commit together or not at all (no foreign key checks it since 0016: events is partitioned)', async () => {
    const { order, stream } = await subscribedOrder();
    const [{ n: fk }] = await sql<{ n: number }[]>`select count(*)::int as n from pg_constraint where conname = 'webhook_deliveries_event_id_events_id_fk'`;
    expect(fk).toBe(0);
    const [subscription] = await sql<{ id: string }[]>`select id from webhook_subscriptions where client_id = ${stream.clientId}`;
    const deliveriesNow = async () => (await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where subscription_id = ${subscription.id}`)[0].n;
    const before = await deliveriesNow();
    const failure = await db
      .transaction(async (tx) => {
        await appendEvents(tx, stream, [draft(order)]);
        expect((await sqlOf(tx)<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where subscription_id = ${subscription.id}`)[0].n).toBe(before + 1);
        throw new Error('the order change fails after its events were appended');
      })
      .then(() => null, (error: Error) => error.message);
    expect(failure).toBe('the order change fails after its events were appended');
    expect(await deliveriesNow()).toBe(before);
    await db.transaction((tx) => appendEvents(tx, stream, [draft(order)]));
    const orphans = await sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries d where d.subscription_id = ${subscription.id} and not exists (select from events e where e.id = d.event_id)`;
    expect(await deliveriesNow()).toBe(before + 1);
    expect(orphans[0].n).toBe(0);
  });
});
