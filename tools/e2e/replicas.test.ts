import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, freePort } from '@lop/db';
import { killAllApiProcesses, startApiProcess, type ApiProcess } from '../../apps/partner-api/src/testing/api-process';
import { newPartner, type Partner, type Receiver, startReceiver, subscribe, TEST_ENCRYPTION_KEY, testDatabaseUrl, untilNotBusy } from '@lop/testing';

/**
 * Scale-out as DESIGN §1 describes it: two API processes and two delivery workers on one
 * PostgreSQL, under concurrent idempotent retries spread over both APIs. Exactly one order per
 * Idempotency-Key, a gap-free event stream, every event delivered at least once.
 */
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KEYS = 60;
const CONCURRENCY = 6;
const database = connectDatabase(testDatabaseUrl(), { max: 2, applicationName: 'replicas-e2e' });
const workers = new Set<ChildProcess>();
const apis: ApiProcess[] = [];
let receiver: Receiver;
let partner: Partner;

const workerMetricsPorts: number[] = [];

function spawnWorker(metricsPort: number): ChildProcess {
  const child = spawn(process.execPath, ['tools/build/run-bundled.mjs', 'apps/delivery-worker/src/main.ts'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: testDatabaseUrl(),
      LOG_LEVEL: 'warn',
      PARTNER_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
      PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '2',
      PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS: '0.1,0.1,0.1,0.1,0.1,0.1',
      PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS: '0.5',
      PARTNER_WORKER_METRICS_PORT: String(metricsPort),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  workers.add(child);
  child.once('exit', () => workers.delete(child));
  return child;
}

beforeAll(async () => {
  receiver = await startReceiver();
  partner = await newPartner(database.db, database.sql);
  await subscribe(database.db, partner, receiver.url('/replicas'));
  const env = { PARTNER_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true', PARTNER_DB_POOL_SIZE: '4' };
  apis.push(...(await Promise.all([startApiProcess(testDatabaseUrl(), env), startApiProcess(testDatabaseUrl(), env)])));
  for (let i = 0; i < 2; i++) {
    workerMetricsPorts.push(await freePort());
    spawnWorker(workerMetricsPorts[i]);
  }
  // Both workers up (their metrics endpoint answers once they run) before any traffic: on a loaded
  // machine one could still be starting when the other has delivered everything.
  for (const port of workerMetricsPorts) {
    for (let answered = false, deadline = Date.now() + 60_000; !answered; await new Promise((resolve) => setTimeout(resolve, 200))) {
      answered = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.ok, () => false);
      if (!answered && Date.now() > deadline) throw new Error(`delivery worker with metrics port ${port} did not start`);
    }
  }
}, 90_000);

afterAll(async () => {
  for (const child of workers) child.kill('SIGKILL');
  for (const api of apis) await api.kill('SIGTERM');
  killAllApiProcesses();
  await receiver?.close();
  await database.close();
});

describe('two API processes and two delivery workers on one database', () => {
  it('the same request sent to both APIs at once: both 201 with one order per key (one waits for the other); the stream is gap-free; every event is delivered at least once', { timeout: 120_000 }, async () => {
    const outcomes = new Map<string, Set<string>>();
    let next = 0;
    const client = async () => {
      while (next < KEYS) {
        const i = next++;
        const idempotencyKey = `replica-${i}-${randomBytes(4).toString('hex')}`;
        const body = { external_order_id: `replica-order-${i}-${randomBytes(3).toString('hex')}`, program_id: partner.programId, item_id: partner.itemId, external_subject_id: partner.subject, collection: 'in_person_draw' };
        const orderIds = new Set<string>();
        // The same request sent to both replicas at once: whichever finds the key in flight on the
        // other replica waits for it, so both answer 201 with one order, exactly one of them a replay.
        const create = (api: ApiProcess) => untilNotBusy(() => api.call('POST', '/v1/orders', { key: partner.key, json: body, headers: { 'idempotency-key': idempotencyKey } }));
        const answers = await Promise.all(apis.map(create));
        for (const response of answers) {
          expect(response.status, response.text).toBe(201);
          orderIds.add(response.body.data.order_id);
        }
        expect(answers.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(1);
        // And once more: a plain retry after success replays.
        const replay = await create(apis[i % 2]);
        expect(replay.status).toBe(201);
        expect(replay.headers.get('idempotent-replayed')).toBe('true');
        orderIds.add(replay.body.data.order_id);
        outcomes.set(idempotencyKey, orderIds);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, client));

    // One order per key, the same one on both replicas.
    expect(outcomes.size).toBe(KEYS);
    for (const [key, orderIds] of outcomes) expect(orderIds.size, key).toBe(1);
    const [{ orders }] = await database.sql<{ orders: number }[]>`select count(*)::int as orders from orders where client_id = ${partner.clientId}`;
    expect(orders).toBe(KEYS);

    // The stream, read through one replica, is dense 1..N and holds every order.created.
    const events: { event_id: string; sequence: number; type: string; data: { order_id: string } }[] = [];
    let cursor = '';
    for (let page = 0; page < 100; page++) {
      const response = await apis[page % 2].call('GET', `/v1/events?limit=50${cursor ? `&cursor=${cursor}` : ''}`, { key: partner.key });
      expect(response.status).toBe(200);
      events.push(...response.body.data.events);
      cursor = response.body.data.next_cursor;
      if (!response.body.data.has_more) break;
    }
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'order.created')).toHaveLength(KEYS);
    const [{ stored }] = await database.sql<{ stored: number }[]>`select count(*)::int as stored from events where client_id = ${partner.clientId}`;
    expect(events).toHaveLength(stored);

    // Every event reached the receiver at least once (the two workers share the queue through SKIP LOCKED).
    const wanted = new Set(events.map((e) => e.event_id));
    await receiver.waitFor((requests) => [...wanted].every((id) => requests.some((r) => r.headers['x-partner-event-id'] === id)), 60_000, 'every event delivered');
    // A worker records the attempt just after the receiver answered: allow it a moment.
    let undelivered = -1;
    for (const deadline = Date.now() + 15_000; undelivered !== 0 && Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
      [{ undelivered }] = await database.sql<{ undelivered: number }[]>`
        select count(*)::int as undelivered from webhook_deliveries d join events e on e.id = d.event_id
        where e.client_id = ${partner.clientId} and d.state <> 'delivered'`;
    }
    expect(undelivered).toBe(0);

    // The workers' own metrics endpoints count the attempts (between them, at least one per event).
    let delivered = 0;
    for (const port of workerMetricsPorts) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      delivered += Number(/^partner_webhook_delivery_attempts_total\{outcome="delivered"\} (\d+)/m.exec(text)?.[1] ?? 0);
    }
    expect(delivered).toBeGreaterThanOrEqual(events.length);
  });
});
