import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { asc, eq, sql as raw } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, webhookDeliveries, webhookDeliveryAttempts } from '@lop/db';
import { appendEvents, attachDeliveryQueue, openDeliveryQueue, webhookSettings, type DeliveryQueue, type EventDraft } from '@lop/domain';
import { eventually, newPartner, type Partner, placeOrder, type Receiver, startReceiver, subscribe, TEST_ENCRYPTION_KEY, testDatabaseUrl, verifyDelivery, workerConfig } from '@lop/testing';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const database = connectDatabase(testDatabaseUrl(), { max: 4, applicationName: 'delivery-crash-test' });
let receiver: Receiver;
let sender: DeliveryQueue;
let detach: () => void;
const running = new Set<ChildProcess>();

/** The worker as its own process, from its bundle as production runs it (tools/build/run-bundled.mjs). */
function spawnWorker() {
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
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout!.on('data', () => undefined);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, exited, stderr: () => stderr };
}

/** `count` events in the partner's stream, their deliveries enqueued in the same transactions. */
async function appendMany(partner: Partner, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < count; done += 500) {
    const drafts: EventDraft[] = Array.from({ length: Math.min(500, count - done) }, () => ({
      type: 'order.updated',
      occurredAt: new Date(),
      programId: partner.programId,
      data: { order_id: randomUUID(), external_order_id: 'bulk', program_id: partner.programId, client_id: partner.clientId, environment: 'sandbox', lifecycle: 'active' },
    }));
    const appended = await database.db.transaction((tx) => appendEvents(tx, { clientId: partner.clientId, environment: 'sandbox' }, drafts));
    ids.push(...appended.map((e) => e.event_id));
  }
  return ids;
}

async function deliveryStates(subscriptionId: string): Promise<Record<string, number>> {
  const rows = (await database.db.execute(raw`
    select state, count(*)::int as n from webhook_deliveries where subscription_id = ${subscriptionId} group by state`)) as unknown as { state: string; n: number }[];
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

const attemptsOf = (deliveryId: string) =>
  database.db.select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, deliveryId)).orderBy(asc(webhookDeliveryAttempts.attemptNumber));

beforeAll(async () => {
  receiver = await startReceiver();
  sender = await openDeliveryQueue({ databaseUrl: testDatabaseUrl(), settings: webhookSettings(workerConfig()).queue, role: 'sender' });
  detach = attachDeliveryQueue(sender);
});
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
});
afterAll(async () => {
  detach?.();
  await sender?.boss.stop({ graceful: false });
  await receiver?.close();
  await database.close();
});

describe('crash safety', () => {
  it('delivers every one of 2,000 pending deliveries at least once across a SIGKILL of the worker', async () => {
    const path = '/crash';
    // A little latency per request keeps many attempts in flight when the worker is killed.
    receiver.respond((request) => ({ status: request.path === path ? 200 : 404, delayMs: 15 }));
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, receiver.url(path));
    const eventIds = await appendMany(partner, 2_000);
    const mine = () => receiver.requests.filter((r) => r.path === path);

    const first = spawnWorker();
    await receiver.waitFor(() => mine().length >= 300, 60_000, '300 deliveries before the kill');
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const receivedAtKill = mine().length;
    const statesAtKill = await deliveryStates(subscription.subscription_id);

    const second = spawnWorker();
    await receiver.waitFor(() => new Set(mine().map((r) => r.headers['x-partner-event-id'])).size >= eventIds.length, 90_000, 'every event after the restart');
    await eventually(async () => expect(await deliveryStates(subscription.subscription_id)).toEqual({ delivered: 2_000 }), 30_000);

    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });

    const received = mine();
    const perEvent = new Map<string, number>();
    for (const request of received) {
      const id = String(request.headers['x-partner-event-id']);
      perEvent.set(id, (perEvent.get(id) ?? 0) + 1);
    }
    const duplicates = received.length - perEvent.size;
    console.info(
      `crash safety: ${received.length} requests for ${perEvent.size} events; ${receivedAtKill} received before the SIGKILL ` +
        `(delivery rows then: ${JSON.stringify(statesAtKill)}); ${duplicates} duplicate deliveries (at-least-once)`,
    );
    expect([...perEvent.keys()].sort()).toEqual([...eventIds].sort());
    // Duplicates can only come from attempts in flight at the kill: far fewer than the backlog.
    expect(duplicates).toBeLessThan(200);
    expect(received.slice(0, 20).every((r) => verifyDelivery(subscription.secret, r))).toBe(true);
  }, 180_000);

  it('a worker SIGKILLed mid-attempt leaves the attempt in the log; the next worker counts it and goes on', async () => {
    const path = '/hangs';
    // The receiver takes the request and never answers while the first worker lives.
    let hang = true;
    receiver.respond((request) => ({ status: request.path === path ? 200 : 404, delayMs: request.path === path && hang ? 60_000 : 0 }));
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, receiver.url(path), ['order.created']);
    await placeOrder(database.db, partner);
    const mine = () => receiver.requests.filter((r) => r.path === path);

    const first = spawnWorker();
    await receiver.waitFor(() => mine().length >= 1, 30_000, 'the first attempt');
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    hang = false;

    const [delivery] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id));
    // Recorded before the request left: the receiver saw attempt 1, and so does the log.
    const atKill = await attemptsOf(delivery.id);
    expect(atKill.map((a) => [a.attemptNumber, a.outcome, a.durationMs])).toEqual([[1, 'sending', null]]);
    expect(atKill[0].id).toBe(mine()[0].headers['x-partner-delivery-id']);
    expect(delivery).toMatchObject({ state: 'pending', attemptsMade: 1 });

    // The job expires (attempt timeout + 5 s) and another worker takes it: attempt 1 is closed as
    // interrupted and attempt 2 follows the schedule.
    const second = spawnWorker();
    await eventually(async () => {
      const [row] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, delivery.id));
      expect(row).toMatchObject({ state: 'delivered', attemptsMade: 2 });
    }, 60_000);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    const attempts = await attemptsOf(delivery.id);
    expect(attempts.map((a) => [a.attemptNumber, a.outcome, a.errorClass])).toEqual([
      [1, 'retry', 'interrupted'],
      [2, 'delivered', null],
    ]);
    expect(mine().map((r) => r.headers['x-partner-delivery-id'])).toEqual(attempts.map((a) => a.id));
  }, 120_000);

  it('on SIGTERM stops taking work, finishes the attempts in flight and exits; the rest waits for the next worker', async () => {
    const path = '/graceful';
    // Slow while the first worker runs (attempts in flight at SIGTERM); quick for the next, which
    // drains one client's backlog with every slot but the reserve (fair delivery, nobody else waits).
    let slow = true;
    receiver.respond((request) => ({ status: request.path === path ? 200 : 404, delayMs: request.path === path && slow ? 800 : 0 }));
    const partner = await newPartner(database.db, database.sql);
    const subscription = await subscribe(database.db, partner, receiver.url(path));
    await appendMany(partner, 400);
    const mine = () => receiver.requests.filter((r) => r.path === path);

    const worker = spawnWorker();
    await receiver.waitFor(() => mine().length >= 1, 30_000, 'the first slow delivery');
    const stoppingAt = Date.now();
    worker.child.kill('SIGTERM');
    const exit = await worker.exited;
    expect(exit, worker.stderr()).toEqual({ code: 0, signal: null });
    // Within the attempt timeout plus the shutdown margin, not after draining the backlog.
    expect(Date.now() - stoppingAt).toBeLessThan(10_000);

    const startedBeforeStop = mine().length;
    const states = await deliveryStates(subscription.subscription_id);
    // Every attempt that reached the receiver was finished and recorded, none left half-done.
    expect(states.delivered).toBe(startedBeforeStop);
    expect(states.pending).toBe(400 - startedBeforeStop);

    slow = false;
    const next = spawnWorker();
    await eventually(async () => expect(await deliveryStates(subscription.subscription_id)).toEqual({ delivered: 400 }), 60_000);
    next.child.kill('SIGTERM');
    expect((await next.exited).code).toBe(0);
  }, 120_000);
});
