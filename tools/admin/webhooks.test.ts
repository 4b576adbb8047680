import { randomBytes } from 'node:crypto';
import { SCOPES } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClients, webhookDeliveries, webhookSubscriptions } from '@lop/db';
import { appendEvents, attachDeliveryQueue, createKey, DataProtector, lazyDeliveryQueue, revokeKey, webhookSettings, loadConfig } from '@lop/domain';
import { fixtures, startReceiver, testDatabaseUrl, verifyDelivery, type Receiver } from '@lop/testing';
import { expectFailure, expectUsageError } from './testing/expect-error';
import { admin, adminWithEnvironment, openTestDatabase } from './testing/run-admin';

// The CLI processes inherit this environment: one encryption key, and local receivers allowed.
const ENCRYPTION_KEY = randomBytes(32).toString('base64');
process.env.PARTNER_ENCRYPTION_KEY = ENCRYPTION_KEY;
process.env.PARTNER_WEBHOOKS_ALLOW_LOOPBACK = 'true';
process.env.PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS = '2';

const database = openTestDatabase();
const f = fixtures(database.db);
let receiver: Receiver;
let laboratoryId: string;
let clientId: string;

beforeAll(async () => {
  receiver = await startReceiver((request) => ({ status: request.path.startsWith('/gone') ? 410 : 200 }));
  const demo = await f.demo();
  laboratoryId = demo.laboratory_id;
  clientId = (await f.client(laboratoryId, 'Webhook CLI Health')).client_id;
  await createKey(database.db, { clientId, environment: 'sandbox', scopes: [...SCOPES] });
});
afterAll(async () => {
  await receiver?.close();
  await database.close();
});

async function create(...args: string[]) {
  const run = await admin('webhooks', 'create', '--client', clientId, '--environment', 'sandbox', ...args, '--json');
  expect(run.code, run.stderr).toBe(0);
  return run.json();
}

describe('admin webhooks', () => {
  it('creates a subscription whose secret is shown once and stored only encrypted', async () => {
    const created = await create('--url', receiver.url('/created'), '--events', 'order.created, order.cancelled');
    expect(created).toMatchObject({ client_id: clientId, environment: 'sandbox', url: receiver.url('/created'), event_types: ['order.created', 'order.cancelled'], status: 'active' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9_-]{40,}$/);

    const [row] = await database.db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, created.subscription_id));
    expect(row.secretProtected).not.toContain(created.secret);
    expect(new DataProtector(Buffer.from(ENCRYPTION_KEY, 'base64')).decrypt(row.secretProtected)).toBe(created.secret);

    const [json, readable] = await Promise.all([admin('webhooks', 'list', '--client', clientId, '--json'), admin('webhooks', 'list', '--client', clientId)]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.json().find((s: { subscription_id: string }) => s.subscription_id === created.subscription_id)).not.toHaveProperty('secret');
    expect(json.stdout).not.toContain(created.secret);
    expect(readable.stdout).toContain(created.subscription_id);
    expect(readable.stdout).not.toContain(created.secret);
  });

  it('expands --events all to the nine event types', async () => {
    const created = await create('--url', receiver.url('/all'), '--events', 'all');
    expect(created.event_types).toHaveLength(9);
  });

  it('refuses plain http, user information and private destinations at registration', async () => {
    const runs = await Promise.all([
      admin('webhooks', 'create', '--client', clientId, '--environment', 'sandbox', '--url', 'http://hooks.partner.example/in', '--events', 'all'),
      admin('webhooks', 'create', '--client', clientId, '--environment', 'sandbox', '--url', 'https://user:pw@hooks.partner.example/in', '--events', 'all'),
      admin('webhooks', 'create', '--client', clientId, '--environment', 'sandbox', '--url', 'https://10.1.2.3/in', '--events', 'all'),
      admin('webhooks', 'create', '--client', clientId, '--environment', 'sandbox', '--url', 'https://2130706433/in', '--events', 'all'),
    ]);
    expectFailure(runs[0], /refused destination: the URL must use https/);
    expectFailure(runs[1], /refused destination: the URL must not contain user information/);
    expectFailure(runs[2], /refused destination: .*10\.1\.2\.3 is a private address/);
    expectFailure(runs[3], /refused destination: .*127\.0\.0\.1 is a loopback address/);
  });

  it('refuses host names with a trailing dot exactly as without it', async () => {
    const urls = ['https://localhost./in', 'https://LOCALHOST../in', 'https://api.localhost./in', 'https://intranet./in', 'https://foo.internal./in', 'https://127.0.0.1../in'];
    const runs = await Promise.all(urls.map((url) => admin('webhooks', 'create', '--client', clientId, '--environment', 'sandbox', '--url', url, '--events', 'all')));
    runs.forEach((run) => expectFailure(run, /refused destination: .*(not a public host name|loopback address)/));
  });

  it("refuses the service's own ports even with the loopback allowance, as configured", async () => {
    const databasePort = new URL(testDatabaseUrl()).port || '5432';
    // On the README's path the tests' database is the embedded server itself (54329): configure
    // another embedded port here, so each case names one setting.
    const embeddedPort = databasePort === '54329' ? '54330' : '54329';
    const own = { DATABASE_URL: testDatabaseUrl(), PORT: '4123', PARTNER_METRICS_PORT: '4124', PARTNER_WORKER_METRICS_PORT: '4125', PARTNER_EMBEDDED_PG_PORT: embeddedPort };
    const cases: [string, RegExp][] = [
      ['http://127.0.0.1:4123/in', /port 4123 on this machine is the service's own partner API \(PORT\)/],
      ['http://localhost:4124/metrics', /own metrics endpoint \(PARTNER_METRICS_PORT\)/],
      ['http://localhost.:4125/metrics', /own delivery worker's metrics endpoint \(PARTNER_WORKER_METRICS_PORT\)/],
      [`http://127.0.0.1:${embeddedPort}/`, /own embedded PostgreSQL \(PARTNER_EMBEDDED_PG_PORT\)/],
      [`http://127.0.0.1:${databasePort}/`, /own database \(DATABASE_URL\)/],
    ];
    const runs = await Promise.all(
      cases.map(([url]) => adminWithEnvironment(own, 'webhooks', 'create', '--client', clientId, '--environment', 'sandbox', '--url', url, '--events', 'all')),
    );
    runs.forEach((run, i) => expectFailure(run, cases[i][1]));
  });

  it('refuses an own port at every delivery attempt too: a subscription made before PORT changed is not delivered', async () => {
    const created = await create('--url', receiver.url('/own-port'), '--events', 'all');
    const receiverPort = new URL(receiver.url('/')).port;
    const run = await adminWithEnvironment({ DATABASE_URL: testDatabaseUrl(), PORT: receiverPort }, 'webhooks', 'test', created.subscription_id, '--json');
    expect(run.code).toBe(1);
    expect(run.json()).toMatchObject({ kind: 'test', state: 'failed', last_error_class: 'blocked_destination', last_status_code: null });
    expect(run.stderr).toMatch(new RegExp(`port ${receiverPort} on this machine is the service's own partner API \\(PORT\\)`));
    expect(receiver.requests.filter((r) => r.path === '/own-port')).toHaveLength(0);
  });

  it('refuses a loopback receiver for production even with the development allowance', async () => {
    await createKey(database.db, { clientId, environment: 'production', scopes: ['events:read'] });
    const run = await admin('webhooks', 'create', '--client', clientId, '--environment', 'production', '--url', receiver.url('/prod'), '--events', 'all');
    expectFailure(run, /loopback destinations are allowed for sandbox subscriptions only/);
  });

  it('refuses a client without an active key in the environment, and a disabled client', async () => {
    const keyless = (await f.client(laboratoryId, 'Keyless Health')).client_id;
    const revoked = (await f.client(laboratoryId, 'Revoked Health')).client_id;
    const key = await createKey(database.db, { clientId: revoked, environment: 'sandbox', scopes: ['events:read'] });
    await revokeKey(database.db, key.key_id);
    const expired = (await f.client(laboratoryId, 'Expired Health')).client_id;
    await createKey(database.db, { clientId: expired, environment: 'sandbox', scopes: ['events:read'], expiresAt: new Date(Date.now() - 60_000) });
    const disabled = (await f.client(laboratoryId, 'Disabled Health')).client_id;
    await createKey(database.db, { clientId: disabled, environment: 'sandbox', scopes: ['events:read'] });
    await database.db.update(apiClients).set({ status: 'disabled' }).where(eq(apiClients.id, disabled));

    const attempt = (client: string, environment = 'sandbox') =>
      admin('webhooks', 'create', '--client', client, '--environment', environment, '--url', receiver.url('/x'), '--events', 'all');
    const [a, b, c, d] = await Promise.all([attempt(keyless), attempt(revoked), attempt(expired), attempt(disabled)]);
    expectFailure(a, /has no active sandbox key/);
    expectFailure(b, /has no active sandbox key/);
    expectFailure(c, /has no active sandbox key/);
    expectFailure(d, /is disabled; only an active client/);
  });

  it('refuses unknown event types and malformed ids as usage errors', async () => {
    const [events, id] = await Promise.all([
      admin('webhooks', 'create', '--client', clientId, '--environment', 'sandbox', '--url', receiver.url('/x'), '--events', 'order.created,order.deleted'),
      admin('webhooks', 'disable', 'not-a-uuid'),
    ]);
    expectUsageError(events, /--events.*unknown event type\(s\): order\.deleted/);
    expectUsageError(id, /expected a uuid/);
  });

  it('takes --limit in plain decimal only: 0x10, 1e2, +5 and 05 are usage errors, 16 is not', async () => {
    const runs = await Promise.all(['0x10', '1e2', '+5', '05', '16'].map((limit) => admin('deliveries', 'list', '--limit', limit, '--json')));
    runs.slice(0, 4).forEach((run) => expectUsageError(run, /--limit.*whole number from 1 to 1000 in plain decimal digits/));
    expect(runs[4].code, runs[4].stderr).toBe(0);
  });

  it('sends a signed test delivery of the chosen type, flagged as a test and in no stream, and rotates the secret so only the new one verifies', async () => {
    const created = await create('--url', receiver.url('/test-delivery'), '--events', 'all');
    const test = await admin('webhooks', 'test', created.subscription_id, '--type', 'result.corrected', '--json');
    expect(test.code, test.stderr).toBe(0);
    expect(test.json()).toMatchObject({ kind: 'test', state: 'delivered', event_id: null, attempts_made: 1, last_status_code: 200 });
    const [request] = receiver.requests.filter((r) => r.path === '/test-delivery');
    expect(verifyDelivery(created.secret, request)).toBe(true);
    const body = JSON.parse(request.rawBody);
    expect(body).toMatchObject({ type: 'result.corrected', sequence: 0, data: { client_id: clientId, external_order_id: 'test-delivery' } });
    expect(request.headers['x-partner-event-id']).toBe(body.event_id);
    expect(request.headers['x-partner-test']).toBe('true');
    expect(request.headers['x-partner-delivery-id']).toBe(test.json().attempts[0].attempt_id);
    expectUsageError(await admin('webhooks', 'test', created.subscription_id, '--type', 'order.shipped'), /--type.*order\.shipped/);
    const [stream] = (await database.sql`select count(*)::int as n from events where client_id = ${clientId}`) as unknown as { n: number }[];
    expect(stream.n).toBe(0);

    const rotate = await admin('webhooks', 'rotate-secret', created.subscription_id, '--json');
    expect(rotate.code, rotate.stderr).toBe(0);
    const rotated = rotate.json();
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    expect(rotated.secret_rotated_at).not.toBeNull();
    expect((await admin('webhooks', 'test', created.subscription_id, '--json')).code).toBe(0);
    const [, second] = receiver.requests.filter((r) => r.path === '/test-delivery');
    expect(verifyDelivery(rotated.secret, second)).toBe(true);
    expect(verifyDelivery(created.secret, second)).toBe(false);
  });

  it('reports a failed test delivery with exit code 1 and the attempt on stdout', async () => {
    const created = await create('--url', receiver.url('/gone'), '--events', 'all');
    const run = await admin('webhooks', 'test', created.subscription_id, '--json');
    expect(run.code).toBe(1);
    expect(run.json()).toMatchObject({ kind: 'test', state: 'failed', last_status_code: 410 });
    expect(run.stderr).toMatch(/^error: the test delivery failed: status 410\n$/);
  });

  it('disables a subscription: it stays listed as disabled and events no longer match it', async () => {
    const created = await create('--url', receiver.url('/disable'), '--events', 'all');
    const run = await admin('webhooks', 'disable', created.subscription_id, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(run.json()).toMatchObject({ subscription_id: created.subscription_id, status: 'disabled', cancelled_deliveries: 0 });
    expectFailure(await admin('webhooks', 'rotate-secret', created.subscription_id), /is disabled/);
  });
});

describe('admin deliveries', () => {
  it('lists deliveries and dead letters, and replays a dead letter as a new auditable delivery', async () => {
    const own = (await f.client(laboratoryId, 'Deliveries CLI Health')).client_id;
    await createKey(database.db, { clientId: own, environment: 'sandbox', scopes: [...SCOPES] });
    const created = (await admin('webhooks', 'create', '--client', own, '--environment', 'sandbox', '--url', receiver.url('/replay'), '--events', 'all', '--json')).json();

    // An event written in-process (no worker runs in this suite), its delivery dead-lettered by hand.
    const queue = lazyDeliveryQueue({ databaseUrl: testDatabaseUrl(), settings: webhookSettings(loadConfig()).queue, role: 'sender' });
    const detach = attachDeliveryQueue(queue.get);
    try {
      const [event] = await database.db.transaction((tx) =>
        appendEvents(tx, { clientId: own, environment: 'sandbox' }, [
          { type: 'order.created', occurredAt: new Date(), data: { order_id: crypto.randomUUID(), external_order_id: 'e', program_id: crypto.randomUUID(), client_id: own, environment: 'sandbox' } },
        ]),
      );
      const [delivery] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.eventId, event.event_id));
      await database.db
        .update(webhookDeliveries)
        .set({ state: 'dead_lettered', failureReason: 'exhausted', attemptsMade: 7, nextAttemptAt: null })
        .where(eq(webhookDeliveries.id, delivery.id));

      const [all, dead, pendingReplay] = await Promise.all([
        admin('deliveries', 'list', '--subscription', created.subscription_id, '--json'),
        admin('deliveries', 'list', '--dead', '--json'),
        admin('deliveries', 'list', '--subscription', created.subscription_id),
      ]);
      expect(all.json().map((d: { delivery_id: string }) => d.delivery_id)).toEqual([delivery.id]);
      expect(dead.json().some((d: { delivery_id: string; state: string }) => d.delivery_id === delivery.id && d.state === 'dead_lettered')).toBe(true);
      expect(pendingReplay.stdout).toContain(`state            dead_lettered (exhausted)`);

      const replay = await admin('deliveries', 'replay', delivery.id, '--json');
      expect(replay.code, replay.stderr).toBe(0);
      const replayed = replay.json();
      expect(replayed).toMatchObject({ kind: 'replay', replay_of: delivery.id, event_id: event.event_id, state: 'pending', attempts_made: 0 });
      expect(replayed.delivery_id).not.toBe(delivery.id);
      expect(replayed.requested_by).toMatch(/\(admin CLI\)$/);
      const [job] = (await database.sql`
        select count(*)::int as n from pgboss.job where name = 'webhook-delivery-sandbox' and data->>'delivery_id' = ${replayed.delivery_id}`) as unknown as { n: number }[];
      expect(job.n).toBeGreaterThanOrEqual(1);

      // A pending delivery cannot be replayed (it is still being worked on), nor can a test delivery.
      const [pending, test] = await database.db
        .insert(webhookDeliveries)
        .values([
          { subscriptionId: created.subscription_id, eventId: event.event_id, kind: 'replay', state: 'pending' },
          { subscriptionId: created.subscription_id, kind: 'test', state: 'delivered' },
        ])
        .returning();
      const [refusedPending, refusedTest] = await Promise.all([admin('deliveries', 'replay', pending.id), admin('deliveries', 'replay', test.id)]);
      expectFailure(refusedPending, /still pending/);
      expectFailure(refusedTest, /is a test delivery/);
      const shown = await admin('deliveries', 'show', delivery.id, '--json');
      expect(shown.json()).toMatchObject({ delivery_id: delivery.id, state: 'dead_lettered', attempts_made: 7 });
    } finally {
      detach();
      await queue.close();
    }
  });
});
