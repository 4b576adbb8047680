import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllApiProcesses, startApiProcess, type ApiProcess } from '../testing/api-process';
import { connectFixtures, startDatabaseProxy, type DatabaseProxy } from '../testing/harness';
import { buildTenant, fixtures, type Tenant } from '../testing/tenant';

/**
 * The database goes away under load, through the harness's TCP proxy (the machine's PostgreSQL
 * itself is never restarted): the API must fail fast with 503 `unavailable` and Retry-After, never
 * hang or answer 500, come back by itself, and lose no order it acknowledged with 201.
 */
const WORKERS = 6;
const BEFORE_MS = 1_500;
const OUTAGE_MS = 2_500;
const AFTER_MS = 2_500;
/** Fail fast: far below the 5 s connect timeout, with room for a loaded 2-core machine. */
const OUTAGE_ANSWER_LIMIT_MS = 2_000;
const RECOVERY_LIMIT_MS = 5_000;

interface Outcome {
  kind: 'create' | 'read';
  status: number;
  code?: string;
  retryAfter: string | null;
  startedAt: number;
  ms: number;
  orderId?: string;
  externalOrderId?: string;
}

const connection = connectFixtures();
let proxy: DatabaseProxy;
let api: ApiProcess;
let tenant: Tenant;
let key: string;
let subject: string;

beforeAll(async () => {
  tenant = await buildTenant(fixtures(connection.db));
  key = await tenant.key();
  proxy = await startDatabaseProxy();
  api = await startApiProcess(proxy.url, { PARTNER_DB_POOL_SIZE: '4' });
  subject = `outage-${randomBytes(4).toString('hex')}`;
  expect((await api.call('PUT', `/v1/subjects/${subject}`, { key })).status).toBe(200);
});

afterAll(async () => {
  await api?.kill('SIGKILL');
  killAllApiProcesses();
  await proxy?.close();
  await connection.close();
});

describe('database outage under load', () => {
  it('fails fast with 503 unavailable + Retry-After, recovers by itself within 5 s, and keeps every acknowledged order', { timeout: 90_000 }, async () => {
    const outcomes: Outcome[] = [];
    const acknowledged: string[] = [];
    let stop = false;
    let n = 0;

    const worker = async (w: number) => {
      while (!stop) {
        const i = n++;
        const startedAt = Date.now();
        const create = i % 2 === 0;
        const externalOrderId = `outage-${w}-${i}-${randomBytes(3).toString('hex')}`;
        try {
          const response = create
            ? await api.call('POST', '/v1/orders', {
                key,
                json: { external_order_id: externalOrderId, program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, external_subject_id: subject, collection: 'in_person_draw' },
                headers: { 'idempotency-key': `idem-${externalOrderId}` },
              })
            : await api.call('GET', acknowledged.length > 0 ? `/v1/orders/${acknowledged[i % acknowledged.length]}` : '/v1/health', { key });
          const outcome: Outcome = {
            kind: create ? 'create' : 'read',
            status: response.status,
            code: response.body?.error?.code,
            retryAfter: response.headers.get('retry-after'),
            startedAt,
            ms: Date.now() - startedAt,
          };
          if (create && response.status === 201) {
            outcome.orderId = response.body.data.order_id;
            outcome.externalOrderId = externalOrderId;
            acknowledged.push(outcome.orderId!);
          }
          outcomes.push(outcome);
        } catch (error) {
          // A transport failure (the API itself went away) would be a finding of its own.
          outcomes.push({ kind: create ? 'create' : 'read', status: 0, code: (error as Error).message, retryAfter: null, startedAt, ms: Date.now() - startedAt });
        }
      }
    };

    const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
    await new Promise((resolve) => setTimeout(resolve, BEFORE_MS));
    const cutAt = Date.now();
    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    const restoredAt = Date.now();
    await proxy.restore();
    await new Promise((resolve) => setTimeout(resolve, AFTER_MS));
    stop = true;
    await Promise.all(workers);

    if (process.env.OUTAGE_DEBUG) console.error(JSON.stringify(outcomes.map((o) => [o.kind, o.status, o.code, o.startedAt - cutAt, o.ms])), api.stderr());
    // Healthy before the outage.
    const before = outcomes.filter((o) => o.startedAt < cutAt);
    expect(before.filter((o) => o.status === 201).length).toBeGreaterThan(0);

    // During the outage: 503 unavailable with Retry-After, answered fast.
    const during = outcomes.filter((o) => o.startedAt >= cutAt + 100 && o.startedAt < restoredAt);
    expect(during.length).toBeGreaterThan(WORKERS);
    for (const o of during) {
      // A request still waiting when the database came back may succeed; none may fail otherwise.
      if (o.startedAt + o.ms >= restoredAt && (o.status === 200 || o.status === 201)) continue;
      expect(o.status, JSON.stringify(o)).toBe(503);
      expect(o.code).toBe('unavailable');
      expect(Number(o.retryAfter)).toBeGreaterThan(0);
      expect(o.ms, JSON.stringify(o)).toBeLessThan(OUTAGE_ANSWER_LIMIT_MS);
    }
    expect(during.filter((o) => o.status === 503).length).toBeGreaterThan(WORKERS);

    // Never a 500 or a dropped connection, at any moment.
    expect(outcomes.filter((o) => o.status >= 500 && o.status !== 503), JSON.stringify(outcomes.filter((o) => o.status >= 500 && o.status !== 503).slice(0, 3))).toEqual([]);
    expect(outcomes.filter((o) => o.status === 0)).toEqual([]);
    expect(new Set(outcomes.map((o) => o.status))).toSatisfy((statuses: Set<number>) => [...statuses].every((s) => [200, 201, 503].includes(s)));

    // Recovery by itself: the first success after the restore came within the limit.
    const firstSuccessAfter = outcomes.filter((o) => o.startedAt >= restoredAt && (o.status === 200 || o.status === 201)).sort((a, b) => a.startedAt - b.startedAt)[0];
    expect(firstSuccessAfter, 'no success after the database came back').toBeDefined();
    expect(firstSuccessAfter.startedAt + firstSuccessAfter.ms - restoredAt).toBeLessThan(RECOVERY_LIMIT_MS);
    const lastSecond = outcomes.filter((o) => o.startedAt >= Date.now() - 1_500);
    expect(lastSecond.every((o) => o.status === 200 || o.status === 201), JSON.stringify(lastSecond.filter((o) => o.status >= 300).slice(0, 3))).toBe(true);

    // No acknowledged order is lost, and each has its order.created event.
    const created = outcomes.filter((o) => o.status === 201);
    const rows = await connection.sql<{ id: string; external_order_id: string; events: number }[]>`
      select o.id, o.external_order_id, (select count(*)::int from events e where e.order_id = o.id and e.type = 'order.created') as events
      from orders o where o.id = any(${created.map((o) => o.orderId!)}::uuid[])`;
    expect(rows).toHaveLength(created.length);
    expect(rows.every((r) => r.events === 1)).toBe(true);
  });
});
