import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { webhookDeliveries, webhookDeliveryAttempts } from '@lop/db';
import { sendTestDelivery } from '@lop/domain';
import { eventually, newPartner, placeOrder, subscribe, testProtector } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

const rig = useDeliveryRig('attempt-detail');
const { database } = rig;

describe('what an attempt keeps for the partner to read', () => {
  it('the request headers as sent (signature included, never the secret), the exact body, and the first 2 KB of the answer', async () => {
    const partner = await newPartner(database.db, database.sql);
    const path = `/detail/${partner.clientId}`;
    const subscription = await subscribe(database.db, partner, rig.receiver.url(path), ['order.created']);
    const answer = `{"error":"${'x'.repeat(3000)}"}`;
    rig.receiver.respond((request) => (request.path === path ? { status: 422, body: answer } : { status: 200 }));

    await placeOrder(database.db, partner);
    const [received] = await rig.receiver.waitFor((requests) => requests.some((r) => r.path === path)).then((all) => all.filter((r) => r.path === path));
    const attempt = await eventually(async () => {
      const [delivery] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
      const [row] = await database.db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, delivery.id));
      // Written as `sending` before the request left; completed once the answer is in.
      expect(row?.outcome).toBe('dead_lettered');
      return row;
    });

    expect(attempt.requestHeaders).toMatchObject({
      'content-type': 'application/json',
      'x-partner-signature': received.headers['x-partner-signature'],
      'x-partner-timestamp': received.headers['x-partner-timestamp'],
      'x-partner-event-id': received.headers['x-partner-event-id'],
      'x-partner-delivery-id': attempt.id,
      host: received.headers.host,
      'content-length': String(Buffer.byteLength(received.rawBody)),
    });
    expect(attempt.requestBody).toBe(received.rawBody);
    expect(attempt.responseBody?.toString('utf8')).toBe(answer.slice(0, 2048));
    expect(attempt.responseBodyTruncated).toBe(true);
    expect(JSON.stringify(attempt)).not.toContain(subscription.secret);
  });

  it('a short answer is kept whole, and a test delivery keeps the same detail', async () => {
    const partner = await newPartner(database.db, database.sql);
    const path = `/short/${partner.clientId}`;
    const subscription = await subscribe(database.db, partner, rig.receiver.url(path), ['order.created']);
    rig.receiver.respond(() => ({ status: 200, body: 'thanks' }));
    const test = await sendTestDelivery(database.db, testProtector(), subscription.subscription_id, { timeoutMs: 5_000, allowLoopback: true, servicePorts: [] });
    expect(test.state).toBe('delivered');
    const [row] = await database.db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, test.delivery_id));
    const received = rig.receiver.requests.find((r) => r.path === path)!;
    expect(row).toMatchObject({ responseBody: Buffer.from('thanks'), responseBodyTruncated: false, requestBody: received.rawBody });
    expect(row.requestHeaders!['x-partner-signature']).toBe(received.headers['x-partner-signature']);
    expect(JSON.stringify(row)).not.toContain(subscription.secret);
  });
});
