import { randomBytes } from 'node:crypto';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '@lop/db';
import { acceptOrder, loadConfig } from '@lop/domain';
import { createLogger, startPartnerApi, type RunningApi } from '@lop/partner-api';
import { startDeliveryWorker, type RunningDeliveryWorker } from '@lop/delivery-worker';
import { newPartner, type Receiver, startReceiver, subscribe, TEST_ENCRYPTION_KEY, testDatabaseUrl, verifyDelivery, workerConfig } from '@lop/testing';

/**
 * The whole path as a partner sees it: orders placed and cancelled over the partner REST API,
 * deliveries enqueued by the API process (no worker runs there), sent by a separate delivery
 * worker, received by a real HTTP endpoint, compared with GET /v1/events.
 */
const database = connectDatabase(testDatabaseUrl(), { max: 2, applicationName: 'webhooks-e2e' });
let api: RunningApi;
let worker: RunningDeliveryWorker;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    PARTNER_DB_POOL_SIZE: '4',
    PARTNER_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
  });
  api = await startPartnerApi({ config, databaseUrl: testDatabaseUrl(), logger: createLogger(config, 'webhooks-e2e') });
  worker = await startDeliveryWorker(testDatabaseUrl(), { config: workerConfig() });
});
afterAll(async () => {
  await api?.close();
  await worker?.close();
  await receiver?.close();
  await database.close();
});

async function call(key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${api.url}${PARTNER_BASE_PATH}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomBytes(8).toString('hex') },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe('webhooks end to end over the partner API', () => {
  it('delivers every event of an order, each signed, within the tolerance, identical to GET /v1/events', async () => {
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, receiver.url('/e2e'));

    const created = await call(partner.key, 'POST', '/v1/orders', {
      external_order_id: `e2e-${randomBytes(4).toString('hex')}`,
      program_id: partner.programId,
      item_id: partner.itemId,
      external_subject_id: partner.subject,
      collection: 'in_person_draw',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const orderId = created.body.data.order_id;
    // The laboratory accepts it (an operation of the laboratory side, not a partner route)…
    await acceptOrder(database.db, { order_id: orderId });
    // …and the partner cancels it.
    const cancelled = await call(partner.key, 'POST', `/v1/orders/${orderId}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);

    const stream = await call(partner.key, 'GET', '/v1/events');
    expect(stream.status).toBe(200);
    const events = stream.body.data.events as { event_id: string; type: string }[];
    expect(events.map((e) => e.type)).toEqual(['order.created', 'order.updated', 'order.cancelled']);

    const mine = () => receiver.requests.filter((r) => r.path === '/e2e');
    await receiver.waitFor(() => new Set(mine().map((r) => r.headers['x-partner-event-id'])).size >= events.length, 20_000, 'every event');
    const byEvent = new Map(mine().map((r) => [String(r.headers['x-partner-event-id']), r]));
    for (const event of events) {
      const request = byEvent.get(event.event_id)!;
      expect(verifyDelivery(subscription.secret, request)).toBe(true);
      expect(Math.abs(Date.now() / 1000 - Number(request.headers['x-partner-timestamp']))).toBeLessThanOrEqual(300);
      expect(JSON.parse(request.rawBody)).toEqual(event);
      // Byte for byte the stream's object, key order included (JSON.parse keeps the response's order).
      expect(request.rawBody).toBe(JSON.stringify(event));
      expect(request.headers['x-partner-api-version']).toBe('v1');
      expect(request.headers['x-partner-delivery-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
    const deliveryIds = new Set(mine().map((r) => r.headers['x-partner-delivery-id']));
    expect(deliveryIds.size).toBe(events.length);
  });
});
