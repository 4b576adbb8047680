import { OPENAPI_PATH, PARTNER_BASE_PATH } from '@lop/contract';
import { beforeAll, describe, expect, it } from 'vitest';
import { demoId } from '@lop/domain';
import { type TestApi } from '../testing/harness';
import { expectError } from '../testing/expect-envelope';
import { unique } from '@lop/testing';
import { useScene } from '../testing/scene';

const LIMIT = 3;
const scene = useScene({ rateLimit: LIMIT, replicas: 2 });
const { api: replicaA, replicas, connection: fx, fixtures: f } = scene;
let laboratoryId: string;

const orderBody = () => ({
  external_order_id: unique('rate'),
  program_id: demoId('program:wellness-sbx'),
  item_id: demoId('item:wellness-sbx:CBC'),
  external_subject_id: 'rate-limit-subject',
  collection: 'in_person_draw',
});

/**
 * The limiter counts in fixed minutes of the epoch (rate-limit.ts): a test's burst that straddles
 * two minutes is counted in both and never reaches the limit. Each starts with 10 s of its minute
 * left at least (a burst takes well under a second).
 */
async function inAFreshWindow(marginMs = 10_000) {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

/** A new API client of the demo laboratory, granted the demo sandbox program, with its subject registered: a budget of its own. */
async function freshClient() {
  const { client_id: clientId } = await f.client(laboratoryId);
  await f.grant(clientId, { id: demoId('program:wellness-sbx'), environment: 'sandbox' });
  const key = () => f.key(clientId, 'sandbox');
  const first = await key();
  expect((await replicaA.call('PUT', '/v1/subjects/rate-limit-subject', { key: first })).status).toBe(200);
  await inAFreshWindow();
  return { clientId, first, key };
}

/** A key of a client nobody else uses. */
const freshKey = async () => (await freshClient()).first;

const create = (api: TestApi, key: string) => api.call('POST', '/v1/orders', { key, json: orderBody(), headers: { 'idempotency-key': unique('idem') } });

beforeAll(async () => {
  laboratoryId = (await f.demo()).laboratory_id;
});

describe('order creation rate limit', () => {
  it('answers RateLimit-* headers on every create and 429 rate_limited with Retry-After past the limit', async () => {
    const key = await freshKey();
    for (let i = 0; i < LIMIT; i++) {
      const response = await create(replicaA, key);
      expect(response.status).toBe(201);
      expect(response.headers.get('ratelimit-limit')).toBe(String(LIMIT));
      expect(response.headers.get('ratelimit-remaining')).toBe(String(LIMIT - i - 1));
      expect(Number(response.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
    }
    const limited = await create(replicaA, key);
    expectError(limited, 429, 'rate_limited');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it('sends every header the OpenAPI document lists for create: 201, its replay, 429 and 401', async () => {
    const document = (await replicaA.fetch('GET', OPENAPI_PATH)).body as any;
    const responses = document.paths[`${PARTNER_BASE_PATH}/v1/orders`].post.responses;
    const listed = (status: string) => Object.keys(responses[status].headers).map((name) => name.toLowerCase());
    expect(listed('201')).toEqual(expect.arrayContaining(['x-request-id', 'idempotent-replayed', 'ratelimit-policy', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']));
    expect(listed('429')).toEqual(expect.arrayContaining(['retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']));
    expect(listed('401')).toContain('www-authenticate');

    const key = await freshKey();
    const json = orderBody();
    const headers = { 'idempotency-key': unique('idem') };
    const created = await replicaA.call('POST', '/v1/orders', { key, json, headers });
    const replayed = await replicaA.call('POST', '/v1/orders', { key, json, headers });
    for (const name of listed('201')) {
      // Idempotent-Replayed is the one header a first response leaves out.
      if (name !== 'idempotent-replayed') expect(created.headers.get(name), name).not.toBeNull();
      expect(replayed.headers.get(name), name).not.toBeNull();
    }
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    let limited = await create(replicaA, key);
    for (let i = 0; i < LIMIT && limited.status === 201; i++) limited = await create(replicaA, key);
    expect(limited.status).toBe(429);
    for (const name of listed('429')) expect(limited.headers.get(name), name).not.toBeNull();
    const unauthorized = await replicaA.call('POST', '/v1/orders', { json: orderBody(), headers: { 'idempotency-key': unique('idem') } });
    expect(unauthorized.status).toBe(401);
    for (const name of listed('401')) expect(unauthorized.headers.get(name), name).not.toBeNull();
  });

  it('is one budget per (client, environment), shared by every replica through PostgreSQL', async () => {
    const key = await freshKey();
    // The budget's window is a clock minute: start where the five requests cannot straddle two.
    const toNextMinute = 60_000 - (Date.now() % 60_000);
    if (toNextMinute < 5_000) await new Promise((resolve) => setTimeout(resolve, toNextMinute + 200));
    const statuses = [];
    for (let i = 0; i < LIMIT + 2; i++) statuses.push((await create(i % 2 === 0 ? replicaA : replicas[1], key)).status);
    expect(statuses).toEqual([201, 201, 201, 429, 429]);
  });

  it('is shared by all keys of the client: a new key buys no new budget', async () => {
    const client = await freshClient();
    const statuses = [];
    for (let i = 0; i < LIMIT + 2; i++) statuses.push((await create(replicaA, await client.key())).status);
    expect(statuses).toEqual([201, 201, 201, 429, 429]);
  });

  it('does not spend one client’s budget on another client', async () => {
    const exhausted = await freshKey();
    for (let i = 0; i <= LIMIT; i++) await create(replicaA, exhausted);
    expect((await create(replicaA, exhausted)).status).toBe(429);
    expect((await create(replicaA, await freshKey())).status).toBe(201);
  });

  it('a rate-limited create writes no order', async () => {
    const key = await freshKey();
    for (let i = 0; i < LIMIT; i++) await create(replicaA, key);
    const body = orderBody();
    const limited = await replicaA.call('POST', '/v1/orders', { key, json: body, headers: { 'idempotency-key': unique('idem') } });
    expect(limited.status).toBe(429);
    const rows = await fx.sql`select 1 from orders where external_order_id = ${body.external_order_id}`;
    expect(rows).toHaveLength(0);
  });
});
