import { TEST_DELIVERY_HEADER } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { webhookDeliveries } from '@lop/db';
import { deliveryHeaderNames, eventDataSchema, eventSchema, getDelivery, listDeliveries, replayDelivery, sendTestDelivery } from '@lop/domain';
import { eventually, newPartner, placeOrder, subscribe, testProtector, verifyDelivery } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

/**
 * A test delivery (console's "send test", admin `webhooks test`) looks like a real one: an event
 * envelope of the type asked for, every header a real delivery carries, ids that agree between
 * body and headers, and one documented flag saying it is a test. A dead letter names its replays.
 */

const options = { timeoutMs: 5_000, allowLoopback: true, servicePorts: [] };

const rig = useDeliveryRig('test-delivery');
const { database } = rig;

/** The spec's event envelope, strictly: nothing besides its fields. */
const strictEvent = z.strictObject({ ...eventSchema.shape, data: eventDataSchema });

describe('a test delivery', () => {
  it('is an event envelope of the chosen type with every delivery header, x-partner-event-id included, its ids agreeing with the headers, flagged as a test', async () => {
    const partner = await newPartner(database.db, database.sql);
    const path = `/test-delivery/${partner.clientId}`;
    const subscription = await subscribe(database.db, partner, rig.receiver.url(path), ['order.created']);

    for (const type of ['result.final', 'integration.action_required'] as const) {
      const sent = await sendTestDelivery(database.db, testProtector(), subscription.subscription_id, options, { type });
      expect(sent).toMatchObject({ kind: 'test', state: 'delivered', attempts_made: 1 });
      const request = rig.receiver.requests.filter((r) => r.path === path).at(-1)!;
      expect(verifyDelivery(subscription.secret, request)).toBe(true);

      const body = strictEvent.parse(JSON.parse(request.rawBody));
      expect(body).toMatchObject({ type, version: 1, environment: 'sandbox', sequence: 0, data: { client_id: partner.clientId, environment: 'sandbox' } });
      expect(body).not.toHaveProperty('delivery_id');
      // Every real result event links the version itself.
      if (type === 'result.final') expect(body.data.links?.result).toBe(`${body.data.links?.results}/${body.data.result_id}`);
      // Every header a real delivery has, no fewer: read from the signer, as the OpenAPI webhooks section is.
      for (const name of deliveryHeaderNames()) expect(request.headers[name], name).toEqual(expect.any(String));
      expect(request.headers['x-partner-event-id']).toBe(body.event_id);
      expect(request.headers['x-partner-delivery-id']).toBe(sent.attempts[0].attempt_id);
      expect(request.headers[TEST_DELIVERY_HEADER]).toBe('true');
    }

    // Without a type: order.created. A real delivery never carries the test flag.
    await sendTestDelivery(database.db, testProtector(), subscription.subscription_id, options);
    expect(JSON.parse(rig.receiver.requests.filter((r) => r.path === path).at(-1)!.rawBody).type).toBe('order.created');
    await placeOrder(database.db, partner);
    const real = await rig.receiver.waitFor((requests) => requests.some((r) => r.path === path && !r.headers[TEST_DELIVERY_HEADER]));
    expect(real.filter((r) => r.path === path && !r.headers[TEST_DELIVERY_HEADER]).map((r) => JSON.parse(r.rawBody).sequence)).toEqual([1]);
  });

  it('a dead letter names its replays (replayed_by) and, once replayed, the replay that recovered it; the replay names it (replay_of)', async () => {
    const partner = await newPartner(database.db, database.sql);
    const path = `/dead/${partner.clientId}`;
    const subscription = await subscribe(database.db, partner, rig.receiver.url(path), ['order.created']);
    rig.receiver.respond((request) => (request.path === path ? { status: 410 } : { status: 200 }));
    await placeOrder(database.db, partner);
    const dead = await eventually(async () => {
      const [row] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
      expect(row?.state).toBe('dead_lettered');
      return row;
    });
    expect(await getDelivery(database.db, dead.id)).toMatchObject({ replayed_by: [], recovered_at: null, recovered_by: null });
    rig.receiver.respond(() => ({ status: 200 }));
    const replay = await replayDelivery(database.db, rig.worker.queue, dead.id, 'test (admin CLI)');
    expect(replay.replay_of).toBe(dead.id);
    expect(await getDelivery(database.db, dead.id)).toMatchObject({ replayed_by: [replay.delivery_id], recovered_at: expect.any(String), recovered_by: replay.delivery_id });
    const listed = (await listDeliveries(database.db, { subscriptionId: subscription.subscription_id, dead: true })).find((d) => d.delivery_id === dead.id);
    expect(listed?.replayed_by).toEqual([replay.delivery_id]);
  });
});
