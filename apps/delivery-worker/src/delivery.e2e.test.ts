import { randomBytes } from 'node:crypto';
import { eq, sql as raw } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { webhookDeliveries, webhookDeliveryAttempts } from '@lop/db';
import { appendEvents, cancelOrder, DataProtector, DeliveryQueueMissingError, laboratoryCaller, readEvents, type PartnerEvent } from '@lop/domain';
import { eventually, newPartner, type Partner, placeOrder, subscribe, verifyDelivery } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

// This test process plays the API: it enqueues through the worker's pg-boss (sender role is the same API).
const rig = useDeliveryRig('delivery-e2e');
const { database } = rig;

async function streamOf(partner: Partner): Promise<PartnerEvent[]> {
  return (await readEvents(database.db, new DataProtector(randomBytes(32)), partner.caller, undefined, 500)).events;
}

describe('webhook delivery, end to end', () => {
  it('delivers every event of an order, signed over the exact bytes, identical to the stream', async () => {
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, rig.receiver.url('/partner/hooks?tenant=1'));
    const seenBefore = rig.receiver.requests.length;

    const order = await placeOrder(database.db, partner);
    const createdCommittedAt = Date.now();
    await cancelOrder(database.db, partner.caller, order.order_id);

    const mine = () => rig.receiver.requests.slice(seenBefore).filter((r) => r.path === '/partner/hooks?tenant=1');
    await rig.receiver.waitFor(() => mine().length >= 2, 15_000, 'create and cancel deliveries');
    const stream = await streamOf(partner);
    expect(stream.map((e) => e.type)).toEqual(['order.created', 'order.cancelled']);

    const received = mine();
    expect(received).toHaveLength(2);
    const rows = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
    for (const request of received) {
      // Verified before parsing, with node:crypto alone, within the 300-second tolerance.
      expect(verifyDelivery(subscription.secret, request)).toBe(true);
      expect(Math.abs(Date.now() / 1000 - Number(request.headers['x-partner-timestamp']))).toBeLessThanOrEqual(300);
      const body = JSON.parse(request.rawBody);
      const streamed = stream.find((e) => e.event_id === body.event_id);
      expect(body).toEqual(streamed);
      expect(request.rawBody).toBe(JSON.stringify(streamed));
      expect(request.headers['x-partner-event-id']).toBe(body.event_id);
      expect(request.headers['x-partner-api-version']).toBe('v1');
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.method).toBe('POST');
      // x-partner-delivery-id identifies this attempt: the id of its attempt row, which the worker
      // records once the receiver has answered (so a moment after the receiver saw the request).
      const row = rows.find((r) => r.eventId === body.event_id);
      await eventually(async () => {
        const attempts = await database.db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, row!.id));
        expect(attempts.map((a) => a.id)).toContain(request.headers['x-partner-delivery-id']);
      });
    }
    expect(new Set(received.map((r) => JSON.parse(r.rawBody).event_id))).toEqual(new Set(stream.map((e) => e.event_id)));
    // LISTEN/NOTIFY: the first delivery starts right after its commit, not at the next poll.
    const created = received.find((r) => JSON.parse(r.rawBody).type === 'order.created')!;
    expect(created.receivedAt - createdCommittedAt).toBeLessThan(1_000);

    await eventually(async () => {
      const states = await database.db.select({ state: webhookDeliveries.state, attempts: webhookDeliveries.attemptsMade }).from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
      expect(states).toEqual([
        { state: 'delivered', attempts: 1 },
        { state: 'delivered', attempts: 1 },
      ]);
    });
  });

  it('a delivery body carries the fact time like the stream: specimen.updated for a collection reported as earlier occurs at collected_at', async () => {
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, rig.receiver.url('/fact-time'), ['specimen.updated']);
    const order = await placeOrder(database.db, partner);
    const lab = laboratoryCaller({ db: database.db });
    await lab.accept({ order_id: order.order_id });
    const collected = await lab.collect({ order_id: order.order_id, collected_at: '2026-11-20T08:00:00Z' });
    const [event] = collected.events.filter((e) => e.type === 'specimen.updated');

    await rig.receiver.waitFor((all) => all.some((r) => r.path === '/fact-time'), 15_000, 'the specimen.updated delivery');
    const delivered = rig.receiver.requests.find((r) => r.path === '/fact-time')!;
    expect(verifyDelivery(subscription.secret, delivered)).toBe(true);
    const streamed = (await streamOf(partner)).find((e) => e.event_id === event.event_id)!;
    expect(streamed.occurred_at).toBe('2026-11-20T08:00:00.000Z');
    expect(delivered.rawBody).toBe(JSON.stringify(streamed));
    expect(JSON.parse(delivered.rawBody)).toMatchObject({ event_id: event.event_id, type: 'specimen.updated', occurred_at: '2026-11-20T08:00:00.000Z', data: { specimen_state: 'collected' } });
  });

  it('delivers only the subscribed event types', async () => {
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, rig.receiver.url('/only-cancel'), ['order.cancelled']);
    const order = await placeOrder(database.db, partner);
    await cancelOrder(database.db, partner.caller, order.order_id);
    await rig.receiver.waitFor((all) => all.some((r) => r.path === '/only-cancel'));
    const rows = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
    expect(rows).toHaveLength(1);
    const [request] = rig.receiver.requests.filter((r) => r.path === '/only-cancel');
    expect(JSON.parse(request.rawBody)).toMatchObject({ type: 'order.cancelled', data: { order_id: order.order_id } });
  });

  it('writes deliveries and their jobs in the event transaction: a rollback leaves neither', async () => {
    const partner = await newPartner(database.db, database.sql);
    await subscribe(database.db, partner, rig.receiver.url('/rolled-back'));
    const count = async () => {
      const [row] = (await database.db.execute(raw`
        select (select count(*) from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id where s.client_id = ${partner.clientId})::int as deliveries,
               (select count(*) from pgboss.job where name = 'webhook-delivery-sandbox')::int as jobs`)) as unknown as { deliveries: number; jobs: number }[];
      return row;
    };
    const before = await count();
    const draft = { type: 'order.created' as const, occurredAt: new Date(), data: { order_id: crypto.randomUUID(), external_order_id: 'x', program_id: partner.programId, client_id: partner.clientId, environment: 'sandbox' as const } };
    await expect(
      database.db.transaction(async (tx) => {
        await appendEvents(tx, { clientId: partner.clientId, environment: 'sandbox' }, [draft]);
        const [inside] = (await tx.execute(raw`select count(*)::int as n from pgboss.job where name = 'webhook-delivery-sandbox' and data->>'attempt' = '1' and state = 'created'`)) as unknown as { n: number }[];
        expect(inside.n).toBeGreaterThan(0);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await count()).toEqual(before);
    expect(rig.receiver.requests.some((r) => r.path === '/rolled-back')).toBe(false);
  });

  it('needs no queue when nothing subscribes, and refuses to commit unscheduled deliveries when something does', async () => {
    const quiet = await newPartner(database.db, database.sql);
    const subscribed = await newPartner(database.db, database.sql);
    await subscribe(database.db, subscribed, rig.receiver.url('/no-queue'));
    rig.detachQueue();
    try {
      await expect(placeOrder(database.db, quiet)).resolves.toMatchObject({ lifecycle: 'pending' });
      await expect(placeOrder(database.db, subscribed)).rejects.toBeInstanceOf(DeliveryQueueMissingError);
      expect(await streamOf(subscribed)).toEqual([]);
    } finally {
      rig.attachQueue();
    }
  });
});
