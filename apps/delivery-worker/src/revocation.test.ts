import { eq, sql as raw } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventStreams, events, webhookDeliveries } from '@lop/db';
import { appendEvents, createKey, getDelivery, grantPrograms, laboratoryCaller, revokeKey, revokeProgramGrants } from '@lop/domain';
import { eventually, newPartner, type Partner, placeOrder, type Reply, subscribe, workerConfig } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

/**
 * Revocation through the webhook side door (issue 33): a withdrawn program grant stops new events
 * and deliveries of its orders and cancels those still waiting; a client with no active key has
 * its deliveries held, without spending attempts, until a key is active again.
 */

/** Per-path scripts: the n-th request to a path gets the n-th reply (the last one repeats). */
const scripts = new Map<string, Reply[]>();
const seen = new Map<string, number>();

const rig = useDeliveryRig('delivery-revocation', {
  reply: (request) => {
    const n = seen.get(request.path) ?? 0;
    seen.set(request.path, n + 1);
    const script = scripts.get(request.path) ?? [{ status: 200 }];
    return script[Math.min(n, script.length - 1)];
  },
  worker: () => ({ config: workerConfig({ PARTNER_WEBHOOK_HELD_RECHECK_SECONDS: '0.3', PARTNER_WEBHOOK_RETRY_AFTER_MAX_SECONDS: '3600' }) }),
});
const { database } = rig;
const lab = laboratoryCaller({ db: database.db });

const requestsTo = (path: string) => rig.receiver.requests.filter((r) => r.path === path);
const deliveriesOf = (subscriptionId: string) =>
  database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscriptionId)).orderBy(webhookDeliveries.createdAt);
const head = async (partner: Partner) =>
  Number((await database.db.select({ last: eventStreams.lastSequence }).from(eventStreams).where(eq(eventStreams.clientId, partner.clientId)))[0]?.last ?? 0);
const streamOf = (partner: Partner) => database.db.select().from(events).where(eq(events.clientId, partner.clientId)).orderBy(events.sequence);
const revoke = (partner: Partner) => revokeProgramGrants(database.db, { clientId: partner.clientId, environment: 'sandbox', programId: partner.programId });
const regrant = (partner: Partner) => grantPrograms(database.db, { clientId: partner.clientId, environment: 'sandbox', programId: partner.programId });

describe('a withdrawn program grant', () => {
  it('stops new events of its orders: nothing appended, no sequence spent, nothing delivered; a re-grant does not replay them', async () => {
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, rig.receiver.url('/revoked-stream'));
    const order = await placeOrder(database.db, partner);
    await rig.receiver.waitFor(() => requestsTo('/revoked-stream').length === 1, 15_000, 'order.created delivered');
    const before = await head(partner);
    expect(before).toBe(1);

    expect((await revoke(partner)).revoked).toHaveLength(1);
    const accepted = await lab.accept({ order_id: order.order_id });
    const collected = await lab.collect({ order_id: order.order_id });
    // The laboratory's work goes on; the partner hears nothing of it.
    expect(collected.order).toMatchObject({ order_id: order.order_id });
    expect([...accepted.events, ...collected.events]).toEqual([]);
    expect(await head(partner)).toBe(before);
    expect((await streamOf(partner)).map((e) => e.sequence)).toEqual([1]);
    expect(await deliveriesOf(subscription.subscription_id)).toHaveLength(1);

    await regrant(partner);
    const received = await lab.receive({ order_id: order.order_id });
    expect(received.events.length).toBeGreaterThan(0);
    // Dense: the next event takes the next sequence, nothing in between was spent.
    expect((await streamOf(partner)).map((e) => Number(e.sequence))).toEqual([1, ...received.events.map((_, i) => 2 + i)]);
    await rig.receiver.waitFor(() => requestsTo('/revoked-stream').length === 1 + received.events.length, 15_000, 'events after the re-grant delivered');
    const types = requestsTo('/revoked-stream').map((r) => JSON.parse(r.rawBody).type);
    expect(types[0]).toBe('order.created');
    // What happened while revoked (accept, collect) is not replayed.
    expect(types.slice(1)).toEqual(received.events.map((e) => e.type));
  });

  it('a revoke waits for an append in flight, and an append after it sees it: no event slips past the revocation', async () => {
    const partner = await newPartner(database.db, database.sql);
    const order = await placeOrder(database.db, partner);
    const stream = { clientId: partner.clientId, environment: 'sandbox' as const };
    const draft = () => ({
      type: 'order.updated' as const,
      occurredAt: new Date(),
      programId: partner.programId,
      orderId: order.order_id,
      data: { order_id: order.order_id, external_order_id: order.external_order_id, program_id: partner.programId, client_id: partner.clientId, environment: 'sandbox' as const, lifecycle: 'active' as const },
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let appended = 0;
    const inFlight = database.db.transaction(async (tx) => {
      appended = (await appendEvents(tx, stream, [draft()])).length;
      await gate;
    });
    await eventually(async () => expect(appended).toBe(1));
    let revoked = false;
    const revoking = revoke(partner).then(() => (revoked = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The grant is held by the append until it commits: the revoke is ordered after it.
    expect(revoked).toBe(false);
    release();
    await inFlight;
    await revoking;
    expect(revoked).toBe(true);
    expect(await database.db.transaction((tx) => appendEvents(tx, stream, [draft()]))).toEqual([]);
    expect((await streamOf(partner)).map((e) => [Number(e.sequence), e.type])).toEqual([
      [1, 'order.created'],
      [2, 'order.updated'],
    ]);
  });

  it('cancels a delivery still waiting for its retry, with the reason; it is not sent, not even after a re-grant', async () => {
    const partner = await newPartner(database.db, database.sql);
    scripts.set('/revoked-retry', [{ status: 503, headers: { 'retry-after': '2' } }, { status: 200 }]);
    const subscription = await subscribe(database.db, partner, rig.receiver.url('/revoked-retry'));
    await placeOrder(database.db, partner);
    await rig.receiver.waitFor(() => requestsTo('/revoked-retry').length === 1, 15_000, 'the first, failing attempt');
    const [waiting] = await eventually(async () => {
      const rows = await deliveriesOf(subscription.subscription_id);
      expect(rows[0]).toMatchObject({ state: 'pending', attemptsMade: 1 });
      return rows;
    });

    await revoke(partner);
    const cancelled = await eventually(async () => {
      const view = await getDelivery(database.db, waiting.id);
      expect(view).toMatchObject({ state: 'cancelled', failure_reason: 'program_revoked', attempts_made: 1 });
      return view;
    }, 10_000);
    expect(cancelled.completed_at).not.toBeNull();
    await regrant(partner);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(requestsTo('/revoked-retry')).toHaveLength(1);
    expect(await getDelivery(database.db, waiting.id)).toMatchObject({ state: 'cancelled', failure_reason: 'program_revoked' });
  });
});

describe('a client with no active key in the environment', () => {
  it('has its deliveries held, visibly and without spending attempts, and resumed where they were once a key is active', async () => {
    const partner = await newPartner(database.db, database.sql);
    scripts.set('/keyless', [{ status: 503, headers: { 'retry-after': '1' } }, { status: 200 }]);
    const subscription = await subscribe(database.db, partner, rig.receiver.url('/keyless'));
    await placeOrder(database.db, partner);
    await rig.receiver.waitFor(() => requestsTo('/keyless').length === 1, 15_000, 'the first, failing attempt');

    // Its only key revoked while the retry waits; an event after that waits too.
    await revokeKey(database.db, partner.caller.keyId);
    await placeOrder(database.db, partner);
    await eventually(async () => {
      const rows = await deliveriesOf(subscription.subscription_id);
      expect(rows.map((r) => [r.state, r.failureReason, r.attemptsMade])).toEqual([
        ['pending', 'no_active_key', 1],
        ['pending', 'no_active_key', 0],
      ]);
    }, 10_000);
    // Held is still: no job chases it, no attempt is spent, the receiver hears nothing.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const held = await deliveriesOf(subscription.subscription_id);
    expect(held.map((r) => [r.state, r.failureReason, r.attemptsMade])).toEqual([
      ['pending', 'no_active_key', 1],
      ['pending', 'no_active_key', 0],
    ]);
    expect(requestsTo('/keyless')).toHaveLength(1);
    const [{ jobs }] = (await database.db.execute(raw`
      select count(*)::int as jobs from pgboss.job where name = 'webhook-delivery-sandbox' and state in ('created', 'retry', 'active')
        and data->>'delivery_id' in (${held[0].id}, ${held[1].id})`)) as unknown as { jobs: number }[];
    expect(jobs).toBe(0);
    expect((await getDelivery(database.db, held[0].id)).failure_reason).toBe('no_active_key');

    await createKey(database.db, { clientId: partner.clientId, environment: 'sandbox', scopes: ['events:read'] });
    await rig.receiver.waitFor(() => requestsTo('/keyless').length === 3, 15_000, 'both deliveries resumed');
    await eventually(async () => {
      const rows = await deliveriesOf(subscription.subscription_id);
      // The held retry went on from attempt 2 of 7: holding spent none of its budget.
      expect(rows.map((r) => [r.state, r.failureReason, r.attemptsMade])).toEqual([
        ['delivered', null, 2],
        ['delivered', null, 1],
      ]);
    });
  });

  it('a disabled API client has no active key either: held while disabled, resumed when enabled', async () => {
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, rig.receiver.url('/disabled-client'));
    await database.sql`update api_clients set status = 'disabled' where id = ${partner.clientId}`;
    await placeOrder(database.db, partner);
    await eventually(async () => expect((await deliveriesOf(subscription.subscription_id)).map((r) => [r.state, r.failureReason])).toEqual([['pending', 'no_active_key']]), 10_000);
    expect(requestsTo('/disabled-client')).toHaveLength(0);
    await database.sql`update api_clients set status = 'active' where id = ${partner.clientId}`;
    await rig.receiver.waitFor(() => requestsTo('/disabled-client').length === 1, 15_000, 'the held delivery resumed');
  });

  it('a key of the other environment does not count', async () => {
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, rig.receiver.url('/other-environment'));
    await revokeKey(database.db, partner.caller.keyId);
    await createKey(database.db, { clientId: partner.clientId, environment: 'production', scopes: ['events:read'] });
    await placeOrder(database.db, partner);
    await eventually(async () => expect((await deliveriesOf(subscription.subscription_id)).map((r) => r.failureReason)).toEqual(['no_active_key']), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(requestsTo('/other-environment')).toHaveLength(0);
  });
});
