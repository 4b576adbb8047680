import { beforeAll, describe, expect, it } from 'vitest';
import { type TestResponse } from '../testing/harness';
import { expectSuccess } from '../testing/expect-envelope';
import { orderBody, ordersClient } from '../testing/orders';
import { buildTenant, type Tenant, unique } from '@lop/testing';
import { useScene } from '../testing/scene';

/**
 * Issue 21, item 1: one client's flood of creates must not hold the pool hostage. Two replicas
 * with the small test pool (4 connections each); client A sends far more concurrent creates than
 * its writes can run, over REST and the console's tRPC door, from several keys; client B reads
 * its order meanwhile.
 */
// Per replica, more than its 2 running and 64 waiting writes of one client arrive at once.
const FLOOD = 300;
// Two write slots per replica (the default is 4): a flood this size then overflows them and their waiting lines.
const scene = useScene({ rateLimit: false, env: { PARTNER_CLIENT_WRITE_CONCURRENCY: '2' }, replicas: 2, partner: 'tenant' });
const { replicas, tenant: flooder, connection } = scene;
let reader: Tenant;

beforeAll(async () => {
  reader = await buildTenant(scene.fixtures);
});

const issueOf = (response: TestResponse) => response.body?.error?.details?.[0]?.issue ?? response.body?.error?.data?.partner?.error?.details?.[0]?.issue;

describe('a client flooding creates', () => {
  it('gets 201 or 429 too_many_concurrent_writes with Retry-After (never 503: the database is up), on both doors; another client’s reads all succeed meanwhile', { timeout: 120_000 }, async () => {
    const keys = await Promise.all(Array.from({ length: 3 }, () => flooder.key()));
    const subject = await ordersClient(replicas[0], keys[0]).subject();
    const readerClient = ordersClient(replicas[0], await reader.key());
    const readerOrder = expectSuccess(await readerClient.create(orderBody(reader.sandbox.program, reader.sandbox.item, await readerClient.subject())), 201);

    let flooding = true;
    const reads: TestResponse[] = [];
    const reading = (async () => {
      while (flooding) reads.push(await ordersClient(replicas[reads.length % 2], readerClient.key).get(readerOrder.order_id));
    })();

    const flood = await Promise.all(
      Array.from({ length: FLOOD }, (_, i) => {
        const api = replicas[i % 2];
        const key = keys[i % keys.length];
        const body = orderBody(flooder.sandbox.program, flooder.sandbox.item, subject);
        const headers = { 'idempotency-key': unique('flood') };
        // Every third call through the console's door: the limit lives in the core, for both.
        return i % 3 === 2
          ? api.fetch('POST', '/api/trpc/orders.create', { json: body, headers: { ...headers, authorization: `Bearer ${key}` } })
          : ordersClient(api, key).create(body, { idempotencyKey: headers['idempotency-key'] });
      }),
    );
    flooding = false;
    await reading;

    const refused = flood.filter((r) => r.status !== 201 && r.status !== 200);
    for (const response of refused) {
      expect(response.status, response.text).toBe(429);
      expect(Number(response.headers.get('retry-after')), response.text).toBeGreaterThanOrEqual(1);
      expect(issueOf(response)).toBe('too_many_concurrent_writes');
    }
    // Far more than two replicas' write slots and waiting lines: some are refused, and some still get through.
    expect(refused.length).toBeGreaterThan(0);
    expect(flood.length - refused.length).toBeGreaterThan(0);
    const created = Number((await connection.sql`select count(*)::int as n from orders where client_id = ${flooder.clientId}`)[0].n);
    expect(created).toBe(flood.length - refused.length);

    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) expect(read.status, read.text).toBe(200);
    console.log(`flood of ${FLOOD}: ${flood.length - refused.length} created, ${refused.filter((r) => r.status === 429).length} × 429, ${refused.filter((r) => r.status === 503).length} × 503; the other client read ${reads.length} times, all 200`);
  });
});
