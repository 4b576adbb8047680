import { beforeAll, describe, expect, it } from 'vitest';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { holdStream, orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/**
 * A write that waits for its stream's counter row longer than the pool's lock_timeout is the
 * client's own writes queueing: the database is up, so the answer is 429 with Retry-After (a
 * budget the partner can act on), never 503 (which says the service is down), and it leaves nothing.
 */
describe("a write that outwaits its stream's counter row", () => {
  const scene = useScene({ rateLimit: false, env: { PARTNER_DB_LOCK_TIMEOUT_SECONDS: '0.2' }, client: true });
  const { tenant, client, sql } = scene;

  beforeAll(async () => {
    expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject)), 201);
  });

  const counts = async () => {
    const [row] = await sql<{ orders: number; events: number; deliveries: number }[]>`
      select (select count(*)::int from orders where client_id = ${tenant.clientId}) as orders,
             (select count(*)::int from events where client_id = ${tenant.clientId}) as events,
             (select count(*)::int from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id where s.client_id = ${tenant.clientId}) as deliveries`;
    return row;
  };

  it('create: 429 rate_limited (too_many_concurrent_writes) with Retry-After, nothing stored, and the key free for the retry', async () => {
    const body = orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject);
    const before = await counts();
    const stream = await holdStream(sql, tenant.clientId);
    let answer;
    try {
      answer = await client.create(body, { idempotencyKey: 'busy-stream-create' });
    } finally {
      await stream.release();
    }
    const error = expectError(answer, 429, 'rate_limited');
    expect(error.details).toEqual([{ issue: 'too_many_concurrent_writes' }]);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(await counts()).toEqual(before);
    const retried = await client.create(body, { idempotencyKey: 'busy-stream-create' });
    expectSuccess(retried, 201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it('cancel: the same answer, and the order stays as it was', async () => {
    const order = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject)), 201) as { order_id: string; lifecycle: string };
    const before = await counts();
    const stream = await holdStream(sql, tenant.clientId);
    let answer;
    try {
      answer = await client.cancel(order.order_id);
    } finally {
      await stream.release();
    }
    expectError(answer, 429, 'rate_limited');
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(await counts()).toEqual(before);
    expect((expectSuccess(await client.get(order.order_id), 200) as { lifecycle: string }).lifecycle).toBe(order.lifecycle);
  });
});
