import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectFixtures, startTestApi, type TestApi, type TestResponse } from '../testing/harness';
import { fixtures } from '../testing/tenant';

/**
 * Webhook operations that make the service send (test sends, resends, retries now, recoveries,
 * endpoint creations) spend one budget per (client, environment), shared by all its keys, enforced
 * in the core's guard: a batch of calls cannot turn the service into a sender of signed POSTs.
 */
const LIMIT = 4;
const fx = connectFixtures();
let api: TestApi;
let receiver: Server;
let received = 0;
let receiverUrl: string;

function mutation(procedure: string, input: unknown, key: string): Promise<TestResponse> {
  return api.fetch('POST', `/api/trpc/${procedure}`, { json: input, headers: { authorization: `Bearer ${key}` } });
}

/** A tRPC batch, as a hostile client would send one: many calls in one POST. */
function batch(procedure: string, inputs: unknown[], key: string): Promise<TestResponse> {
  const names = inputs.map(() => procedure).join(',');
  const body = Object.fromEntries(inputs.map((input, i) => [String(i), input]));
  return api.fetch('POST', `/api/trpc/${names}?batch=1`, { json: body, headers: { authorization: `Bearer ${key}` } });
}

beforeAll(async () => {
  receiver = createServer((_req, res) => {
    received++;
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  api = await startTestApi({ PARTNER_WEBHOOK_OPERATION_RATE_LIMIT: String(LIMIT), PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true' });
});
afterAll(async () => {
  await api.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  await fx.close();
});

describe('the webhook operations budget', () => {
  it('a batch of 30 test sends spends one budget per client: LIMIT sent, the rest 429 rate_limited with Retry-After, nothing sent for them', async () => {
    const f = fixtures(fx.db);
    const laboratory = await f.laboratory();
    const client = await f.client(laboratory.id);
    const [firstKey, secondKey] = [await f.key(client.client_id, 'sandbox'), await f.key(client.client_id, 'sandbox')];

    const created = await mutation('console.webhooks.create', { url: receiverUrl, event_types: ['order.created'] }, firstKey);
    expect(created.status, created.text).toBe(200);
    const subscriptionId = created.body.result.data.data.subscription_id as string;
    const before = received;

    // The second key of the same client draws on the same budget (one unit already spent by create).
    const answered = await batch('console.webhooks.sendTest', Array.from({ length: 30 }, () => ({ subscription_id: subscriptionId })), secondKey);
    const results = answered.body as { result?: { data: { data: { state: string } } }; error?: { data: { httpStatus: number; partner: { error: { code: string; message: string } } } } }[];
    expect(results).toHaveLength(30);
    const sent = results.filter((r) => r.result);
    const refused = results.filter((r) => r.error);
    expect(sent).toHaveLength(LIMIT - 1);
    expect(refused).toHaveLength(30 - (LIMIT - 1));
    for (const r of refused) {
      expect(r.error!.data.httpStatus).toBe(429);
      expect(r.error!.data.partner.error.code).toBe('rate_limited');
      expect(r.error!.data.partner.error.message).toMatch(/Too many webhook operations .* for this API client in this environment; retry after \d+ seconds\./);
    }
    expect(Number(answered.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(received - before).toBe(LIMIT - 1);

    // Every other spending operation is refused too, before it does anything.
    for (const [procedure, input] of [
      ['console.webhooks.create', { url: receiverUrl, event_types: ['order.created'] }],
      ['console.webhooks.recover', { subscription_id: subscriptionId, since: new Date(0).toISOString() }],
      ['console.webhooks.resend', { delivery_id: subscriptionId }],
      ['console.webhooks.retryNow', { delivery_id: subscriptionId }],
    ] as const) {
      const response = await mutation(procedure, input, firstKey);
      expect(response.status, `${procedure}: ${response.text}`).toBe(429);
      expect(response.body.error.data.partner.error.code).toBe('rate_limited');
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    // Reading is not spending.
    expect((await api.fetch('GET', `/api/trpc/console.webhooks.list?input=${encodeURIComponent('{}')}`, { headers: { authorization: `Bearer ${firstKey}` } })).status).toBe(200);

    // Another client's budget is its own.
    const other = await f.client(laboratory.id);
    const otherCreated = await mutation('console.webhooks.create', { url: receiverUrl, event_types: ['order.created'] }, await f.key(other.client_id, 'sandbox'));
    expect(otherCreated.status, otherCreated.text).toBe(200);
  });
});
