/**
 * Webhook delivery benchmark: commit-to-receipt latency at a steady event rate — of the webhook
 * worker, and of a partner reading GET /v1/events?wait=25 (the API as its own process) — and the drain rate
 * of a backlog spread over several clients and of one client's backlog alone, against a real
 * receiver on 127.0.0.1 — and, as the drains' yardstick in the same run, the rate of a bare
 * delivery loop (signed POSTs to the same receiver, same concurrency).
 *
 *   DATABASE_URL=postgres://… npx tsx tools/bench/webhook-latency.ts [--rate 50] [--seconds 10] [--backlog 5000]
 *
 * Uses a fresh database on the server (dropped afterwards). The worker runs in this process with
 * the default concurrency, so the receiver, the event writer and the worker share the machine.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { connectDatabase, createTestDatabase, freePort, locateDatabase } from '@lop/db';
import {
  appendEvents,
  attachDeliveryQueue,
  createClient,
  createKey,
  createSubscription,
  DataProtector,
  loadConfig,
  openDeliveryQueue,
  seedDemo,
  webhookSettings,
  type EventDraft,
} from '@lop/domain';
import { startDeliveryWorker } from '@lop/delivery-worker';
import { startReceiver } from '@lop/testing';
import { startService } from './processes';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '10' },
    backlog: { type: 'string', default: '5000' },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const backlog = Number(values.backlog);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const base = loadConfig();
const encryptionKey = randomBytes(32).toString('base64');
const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn', PARTNER_ENCRYPTION_KEY: encryptionKey, PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true' });
const location = await locateDatabase({ databaseUrl: base.DATABASE_URL, dataDir: base.PARTNER_DATA_DIR, embeddedPort: base.PARTNER_EMBEDDED_PG_PORT });
const testDatabase = await createTestDatabase(location.url, 'bench');
const database = connectDatabase(testDatabase.url, { max: 8, applicationName: 'webhook-bench' });
const receiver = await startReceiver();

try {
  const demo = await seedDemo(database.db);
  const protector = new DataProtector(Buffer.from(encryptionKey, 'base64'));
  /** A sandbox client of the demo laboratory with a key and an endpoint on the receiver for order.updated: its stream. */
  const subscribedStream = async (name: string) => {
    const client = await createClient(database.db, demo.laboratory_id, name);
    const { key } = await createKey(database.db, { clientId: client.client_id, environment: 'sandbox', scopes: ['events:read'] });
    await createSubscription(
      database.db,
      protector,
      { clientId: client.client_id, environment: 'sandbox', url: receiver.url('/bench'), eventTypes: ['order.updated'] },
      webhookSettings(config).destination,
    );
    return { clientId: client.client_id, environment: 'sandbox' as const, key };
  };
  const { key: streamKey, ...stream } = await subscribedStream('Benchmark Health');
  const sender = await openDeliveryQueue({ databaseUrl: testDatabase.url, settings: webhookSettings(config).queue, role: 'sender' });
  const detach = attachDeliveryQueue(sender);
  const draft = (): EventDraft => ({
    type: 'order.updated',
    occurredAt: new Date(),
    data: { order_id: randomUUID(), external_order_id: 'bench', program_id: randomUUID(), client_id: stream.clientId, environment: 'sandbox', lifecycle: 'active' },
  });
  const eventIdOf = (i: number) => String(receiver.requests[i].headers['x-partner-event-id']);

  // 1. Steady rate: one event per transaction; latency = receipt time minus the commit's return,
  // for the webhook worker and for a partner holding GET /v1/events?wait=25 (the API's own process).
  let worker = await startDeliveryWorker(testDatabase.url, { config });
  const api = await startService('apps/partner-api/src/main.ts', { DATABASE_URL: testDatabase.url, LOG_LEVEL: 'warn', PARTNER_ENCRYPTION_KEY: encryptionKey }, { port: await freePort(), readyPath: '/readyz' });
  const readAt = new Map<string, number>();
  const stopReading = new AbortController();
  const reading = (async () => {
    let cursor = '';
    while (!stopReading.signal.aborted) {
      const response = await fetch(`${api.url}${PARTNER_BASE_PATH}/v1/events?limit=500&wait=25${cursor ? `&cursor=${cursor}` : ''}`, {
        headers: { authorization: `Bearer ${streamKey}` },
        signal: stopReading.signal,
      }).catch(() => undefined);
      if (!response) break;
      const page = ((await response.json()) as { data: { events: { event_id: string }[]; next_cursor: string } }).data;
      const at = Date.now();
      for (const event of page.events) readAt.set(event.event_id, at);
      cursor = page.next_cursor;
    }
  })();
  const committedAt = new Map<string, number>();
  const total = Math.round(rate * seconds);
  const startedAt = Date.now();
  for (let i = 0; i < total; i++) {
    const due = startedAt + (i * 1000) / rate;
    if (due > Date.now()) await sleep(due - Date.now());
    const [event] = await database.db.transaction((tx) => appendEvents(tx, stream, [draft()]));
    committedAt.set(event.event_id, Date.now());
  }
  await receiver.waitFor((all) => all.length >= total, 60_000, 'steady-rate deliveries');
  const latencies = receiver.requests.slice(0, total).map((r, i) => r.receivedAt - committedAt.get(eventIdOf(i))!);
  latencies.sort((a, b) => a - b);
  console.log(`steady rate: ${total} events at ${rate}/s, one per transaction`);
  console.log(`  commit-to-receipt latency: median ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies.at(-1)} ms`);
  const deadline = Date.now() + 30_000;
  while (readAt.size < total && Date.now() < deadline) await sleep(50);
  stopReading.abort();
  await reading;
  await api.stop();
  // The commit's return is taken after the transaction's promise resolves, so a read can be seen first: 0 then.
  const readLatencies = [...committedAt].filter(([id]) => readAt.has(id)).map(([id, at]) => Math.max(0, readAt.get(id)! - at));
  readLatencies.sort((a, b) => a - b);
  console.log(
    `  waiting reader (GET /v1/events?wait=25): ${readLatencies.length} of ${total} read, commit-to-read latency: p50 ${percentile(readLatencies, 50)} ms, p99 ${percentile(readLatencies, 99)} ms, max ${readLatencies.at(-1)} ms`,
  );

  // 2. Backlog: write it while no worker runs, then time one worker draining it. It is spread over
  // as many clients as the worker's concurrency holds at its per-client limit (a laboratory's
  // outage leaves every tenant a backlog): one client's backlog alone drains at that client's
  // share by design (fair delivery, docs/operations.md), which is not the worker's rate.
  await worker.close();
  const { concurrency, clientConcurrency } = webhookSettings(config);
  const streams = [stream];
  for (let i = 1; i < Math.ceil(concurrency / clientConcurrency); i++) {
    streams.push(await subscribedStream(`Benchmark Health ${i + 1}`));
  }
  const before = receiver.requests.length;
  for (let done = 0, n = 0; done < backlog; done += 500, n++) {
    const batch = Array.from({ length: Math.min(500, backlog - done) }, draft);
    const target = streams[n % streams.length];
    await database.db.transaction((tx) => appendEvents(tx, target, batch.map((d) => ({ ...d, data: { ...d.data, client_id: target.clientId } }))));
  }
  const drainStart = Date.now();
  worker = await startDeliveryWorker(testDatabase.url, { config });
  await receiver.waitFor((all) => all.length - before >= backlog, 300_000, 'the backlog');
  const drainSeconds = (Date.now() - drainStart) / 1000;
  console.log(`backlog: ${backlog} deliveries of ${streams.length} clients drained in ${drainSeconds.toFixed(2)} s (worker start included): ${Math.round(backlog / drainSeconds)} deliveries/s`);
  await worker.close();

  // 3. One client's backlog alone, the same size: nobody else waits, so fair delivery lets it
  // borrow every slot but the reserve (docs/operations.md, "Fair delivery").
  const aloneBefore = receiver.requests.length;
  for (let done = 0; done < backlog; done += 500) {
    await database.db.transaction((tx) => appendEvents(tx, stream, Array.from({ length: Math.min(500, backlog - done) }, draft)));
  }
  const aloneStart = Date.now();
  worker = await startDeliveryWorker(testDatabase.url, { config });
  await receiver.waitFor((all) => all.length - aloneBefore >= backlog, 300_000, 'one client’s backlog');
  const aloneSeconds = (Date.now() - aloneStart) / 1000;
  console.log(`one client's backlog: ${backlog} deliveries drained alone in ${aloneSeconds.toFixed(2)} s (worker start included): ${Math.round(backlog / aloneSeconds)} deliveries/s`);
  await worker.close();

  // 4. The yardstick for the drains, in this same run: a bare delivery loop — the same number of
  // signed JSON POSTs to the same receiver, at the worker's concurrency, with no queue, each
  // recorded the least way a delivery that survives a crash can be: one committed write before
  // the POST and one after (as the GET baseline runs the API's SQL), on a pool the worker's size.
  await database.sql`create table bare_attempts (id bigserial primary key, state text not null, status int)`;
  const recorder = connectDatabase(testDatabase.url, { max: 10, applicationName: 'webhook-bench-bare' });
  const bareBefore = receiver.requests.length;
  const secret = randomBytes(32);
  const body = JSON.stringify({ ...draft(), event_id: randomUUID() });
  // node:http with a keep-alive agent, as the worker's own transport (libs/domain/src/webhooks/delivery-attempt.ts).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, scheduling: 'lifo' });
  const target = new URL(receiver.url('/bare'));
  const postOne = () =>
    new Promise<void>((resolve, reject) => {
      const signature = createHmac('sha256', secret).update(body).digest('base64');
      const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'x-partner-signature': `v1=${signature}` };
      const request = http.request({ method: 'POST', host: target.hostname, port: target.port, path: target.pathname, headers, agent }, (response) => {
        response.resume();
        response.once('end', resolve);
      });
      request.once('error', reject);
      request.end(body);
    });
  let next = 0;
  const bareStart = Date.now();
  const post = async () => {
    while (next < backlog) {
      next++;
      const [row] = await recorder.sql<{ id: string }[]>`insert into bare_attempts (state) values ('sending') returning id`;
      await postOne();
      await recorder.sql`update bare_attempts set state = 'done', status = 200 where id = ${row.id}`;
    }
  };
  await Promise.all(Array.from({ length: webhookSettings(config).concurrency }, post));
  const bareSeconds = (Date.now() - bareStart) / 1000;
  agent.destroy();
  await recorder.close();
  if (receiver.requests.length - bareBefore < backlog) throw new Error('the bare delivery loop lost requests');
  console.log(`bare delivery loop: ${backlog} POSTs, each with a write before and after, in ${bareSeconds.toFixed(2)} s: ${Math.round(backlog / bareSeconds)} deliveries/s`);
  detach();
  await sender.boss.stop({ graceful: false });
} finally {
  await receiver.close();
  await database.close();
  await testDatabase.drop();
  await location.stop();
}
process.exit(0);
