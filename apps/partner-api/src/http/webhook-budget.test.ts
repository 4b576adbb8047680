import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type TestResponse } from '../testing/harness';
import { fixtures } from '@lop/testing';
import { useScene } from '../testing/scene';

/**
 * Webhook operations that make the service send (test sends, resends, retries now, recoveries,
 * endpoint creations) spend one budget per (client, environment), shared by all its keys, enforced
 * in the core's guard: a batch of calls cannot turn the service into a sender of signed POSTs.
 */
const LIMIT = 4;
const { api, connection: fx } = useScene({ env: { PARTNER_WEBHOOK_OPERATION_RATE_LIMIT: String(LIMIT), PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
let receiver: Server;
let received = 0;
let receiverUrl: string;

function mutation(procedure: string, input: unknown, key: string): Promise<TestResponse> {
  return api.fetch('POST', `/api/trpc/${procedure}`, { json: input, headers: { authorization: `Bearer ${key}` } });
}

/** Many calls at once, each its own request (several tabs, a script); calls of a tRPC batch spend the same way. */
async function many(procedure: string, inputs: unknown[], key: string, target: TestApi = api) {
  const responses = await Promise.all(inputs.map((input) => target.fetch('POST', `/api/trpc/${procedure}`, { json: input, headers: { authorization: `Bearer ${key}` } })));
  return responses.map((r) => r.body as { result?: { data: { data: { state: string } } }; error?: { data: { httpStatus: number; partner: { error: { code: string; message: string; details?: { issue: string }[] } } } } });
}

beforeAll(async () => {
  receiver = createServer((_req, res) => {
    received++;
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

describe('the webhook operations budget', () => {
  it('30 concurrent test sends spend one budget per client: LIMIT sent, the rest 429 rate_limited, nothing sent for them', async () => {
    const f = fixtures(fx.db);
    const laboratory = await f.laboratory();
    const client = await f.client(laboratory.id);
    const [firstKey, secondKey] = [await f.key(client.client_id, 'sandbox'), await f.key(client.client_id, 'sandbox')];

    const created = await mutation('console.webhooks.create', { url: receiverUrl, event_types: ['order.created'] }, firstKey);
    expect(created.status, created.text).toBe(200);
    const subscriptionId = created.body.result.data.data.subscription_id as string;
    const before = received;

    // The second key of the same client draws on the same budget (one unit already spent by create).
    const results = await many('console.webhooks.sendTest', Array.from({ length: 30 }, () => ({ subscription_id: subscriptionId })), secondKey);
    const sent = results.filter((r) => r.result);
    const refused = results.filter((r) => r.error);
    expect(sent).toHaveLength(LIMIT - 1);
    expect(refused).toHaveLength(30 - (LIMIT - 1));
    for (const r of refused) {
      expect(r.error!.data.httpStatus).toBe(429);
      expect(r.error!.data.partner.error.code).toBe('rate_limited');
      expect(r.error!.data.partner.error.message).toMatch(/Too many webhook operations .* for this API client in this environment; retry after \d+ seconds\./);
    }
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

  it('25 concurrent endpoint creations (within the budget) create at most the 10-endpoint cap', async () => {
    const roomy = await startTestApi({ PARTNER_WEBHOOK_OPERATION_RATE_LIMIT: '1000', PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true' });
    try {
      const f = fixtures(fx.db);
      const client = await f.client((await f.laboratory()).id);
      const key = await f.key(client.client_id, 'sandbox');
      const inputs = Array.from({ length: 25 }, (_, i) => ({ url: `${receiverUrl}/${i}`, event_types: ['order.created'] }));
      // A 429 says "not now, try again" (on a loaded machine, CI, some of 25 simultaneous writes of
      // one client get it): sent again until every creation has its final answer, as a partner does.
      const results = await many('console.webhooks.create', inputs, key, roomy);
      for (let round = 0; round < 50 && results.some((r) => r.error?.data.httpStatus === 429); round++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const again = results.flatMap((r, i) => (r.error?.data.httpStatus === 429 ? [i] : []));
        const answers = await many('console.webhooks.create', again.map((i) => inputs[i]), key, roomy);
        again.forEach((i, n) => (results[i] = answers[n]));
      }
      expect(results.filter((r) => r.result)).toHaveLength(10);
      for (const r of results.filter((r) => r.error)) {
        expect(r.error!.data.httpStatus).toBe(409);
        expect(r.error!.data.partner.error.details![0].issue).toBe('too_many_endpoints');
      }
      const [{ n }] = await fx.sql<{ n: number }[]>`select count(*)::int as n from webhook_subscriptions where client_id = ${client.client_id}`;
      expect(n).toBe(10);
    } finally {
      await roomy.close();
    }
  });
});
