import { asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { webhookDeliveries, webhookDeliveryAttempts } from '@lop/db';
import { DELIVERY_QUEUES } from '@lop/domain';
import { eventually, newPartner, placeOrder, type Reply, subscribe } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

/**
 * A receiver is the partner's code, and may answer anything: the attempt log stores it safely,
 * every attempt is recorded, and a delivery is never attempted more than 7 times.
 */

const replies = new Map<string, Reply>();

const rig = useDeliveryRig('hostile-receiver', { reply: (request) => replies.get(request.path) ?? { status: 200 } });
const { database } = rig;

const requestsTo = (path: string) => rig.receiver.requests.filter((r) => r.path === path);
const attemptsOf = (deliveryId: string) =>
  database.db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, deliveryId)).orderBy(asc(webhookDeliveryAttempts.attemptNumber));

/** One order.created delivery to a receiver that always gives `reply`, followed until it is dead-lettered. */
async function deadLetteredBy(path: string, reply: Reply) {
  replies.set(path, reply);
  const partner = await newPartner(database.db, database.sql);
  const subscription = await subscribe(database.db, partner, rig.receiver.url(path), ['order.created']);
  await placeOrder(database.db, partner);
  const [delivery] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
  const settled = await eventually(async () => {
    const [row] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, delivery.id));
    expect(row.state).toBe('dead_lettered');
    return row;
  }, 30_000);
  return { partner, subscription, delivery: settled, attempts: await attemptsOf(delivery.id) };
}

const NUL_ANSWER = Buffer.concat([Buffer.from('{"error":"'), Buffer.from([0, 0, 0]), Buffer.from('nul"}')]);
const INVALID_UTF8 = Buffer.from([0x7b, 0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82, 0x7d]);

describe('a hostile receiver', () => {
  it('answering NUL bytes: all 7 attempts recorded with the bytes as sent, then dead-lettered', async () => {
    const { delivery, attempts } = await deadLetteredBy('/nul', { status: 500, body: NUL_ANSWER });
    expect(delivery).toMatchObject({ attemptsMade: 7, failureReason: 'exhausted', lastStatusCode: 500 });
    expect(attempts.map((a) => a.outcome)).toEqual(['retry', 'retry', 'retry', 'retry', 'retry', 'retry', 'dead_lettered']);
    for (const attempt of attempts) expect(attempt.responseBody).toEqual(NUL_ANSWER);
    expect(requestsTo('/nul')).toHaveLength(7);
  });

  it('answering invalid UTF-8: stored as bytes, 7 attempts, dead-lettered', async () => {
    const { attempts } = await deadLetteredBy('/invalid-utf8', { status: 503, body: INVALID_UTF8 });
    expect(attempts).toHaveLength(7);
    expect(attempts.every((a) => a.responseBody?.equals(INVALID_UTF8) && a.responseBodyTruncated === false)).toBe(true);
    expect(requestsTo('/invalid-utf8')).toHaveLength(7);
  });

  it('answering 10 MB: the first 2 KB kept, marked truncated, 7 attempts, dead-lettered', async () => {
    const huge = Buffer.alloc(10 * 1024 * 1024, 'x');
    huge.write('\u0000', 100);
    const { attempts } = await deadLetteredBy('/huge', { status: 500, body: huge });
    expect(attempts).toHaveLength(7);
    for (const attempt of attempts) {
      expect(attempt.responseBody).toEqual(huge.subarray(0, 2048));
      expect(attempt.responseBodyTruncated).toBe(true);
    }
    expect(requestsTo('/huge')).toHaveLength(7);
  });

  it('answering with 500 headers: each attempt recorded with its status', async () => {
    const headers = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`x-noise-${i}`, `value-${i}`]));
    const { attempts } = await deadLetteredBy('/headers', { status: 502, headers, body: 'bad gateway' });
    expect(attempts.map((a) => a.statusCode)).toEqual([502, 502, 502, 502, 502, 502, 502]);
    expect(attempts[6].responseBody?.toString()).toBe('bad gateway');
  });

  it('never claims the next attempt while the current one is in flight (a stray or "retry now" job)', async () => {
    const path = '/in-flight';
    replies.set(path, { status: 200 });
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, rig.receiver.url(path), ['order.created']);
    await placeOrder(database.db, partner);
    await rig.receiver.waitFor(() => requestsTo(path).length === 1);
    const [delivery] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
    // As the log looks while attempt 1 is on the wire: pending, attempt 1 claimed and sending.
    await eventually(async () => expect((await attemptsOf(delivery.id))[0]?.outcome).toBe('delivered'));
    await database.db.update(webhookDeliveries).set({ state: 'pending', completedAt: null }).where(eq(webhookDeliveries.id, delivery.id));
    await database.db.update(webhookDeliveryAttempts).set({ outcome: 'sending', inFlightUntil: new Date(Date.now() + 60_000) }).where(eq(webhookDeliveryAttempts.deliveryId, delivery.id));
    await rig.worker.queue.boss.insert(DELIVERY_QUEUES.sandbox, [{ data: { delivery_id: delivery.id, attempt: 2 } }]);
    await eventually(async () => expect((await rig.worker.queue.boss.getQueue(DELIVERY_QUEUES.sandbox))?.queuedCount).toBe(0));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(requestsTo(path)).toHaveLength(1);
    expect((await attemptsOf(delivery.id)).map((a) => a.attemptNumber)).toEqual([1]);
  });

  it('never attempts an eighth time, whatever jobs pg-boss holds for the delivery', async () => {
    const path = '/exhausted-then-woken';
    const { delivery } = await deadLetteredBy(path, { status: 500 });
    // Stray wake-up calls for the last attempt and past it (a job run again, a duplicate).
    await rig.worker.queue.boss.insert(DELIVERY_QUEUES.sandbox, [{ data: { delivery_id: delivery.id, attempt: 7 } }, { data: { delivery_id: delivery.id, attempt: 8 } }]);
    // Reopened by hand as if still pending at its last attempt: only a claim of attempt 8 could send, and none is allowed.
    await database.db.update(webhookDeliveries).set({ state: 'pending' }).where(eq(webhookDeliveries.id, delivery.id));
    await rig.worker.queue.boss.insert(DELIVERY_QUEUES.sandbox, [{ data: { delivery_id: delivery.id, attempt: 8 } }]);
    await eventually(async () => {
      const queued = await rig.worker.queue.boss.getQueue(DELIVERY_QUEUES.sandbox);
      expect(queued?.queuedCount).toBe(0);
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(requestsTo(path)).toHaveLength(7);
    expect(await attemptsOf(delivery.id)).toHaveLength(7);
  });
});
