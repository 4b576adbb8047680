/**
 * Noisy neighbour (issue 21): does one partner slow another? Client B reads its orders at a fixed
 * rate and receives a webhook for each order it creates at a fixed rate, first alone, then while
 * client A
 *   (a) floods POST /v1/orders over 6 keys at 64 concurrent connections: the six keys share one
 *       create budget per minute (`createBudget`, above B's own rate; `--noisy-create-budget`
 *       raises it, e.g. to 100000, to see the concurrency limit alone against raw CPU), and
 *   (b) recovers 10,000 dead letters of an endpoint that answers after 9 s, through the console's
 *       `console.webhooks.recover` (as many calls as it takes), and
 *   (c) holds its maximum of waiting reads of GET /v1/events?wait=30 (PARTNER_EVENTS_WAITING_PER_CLIENT,
 *       each sent again as soon as it is answered), while as many more readers are refused 429 and
 *       retry after Retry-After.
 * Recorded: B's GET p99 and first-attempt webhook p99 during ÷ solo, B's errors, and A's slowest
 * refusal (and slowest answer). Run by `npm run bench` (its `noisyNeighbour` section) or alone with
 * `npm run bench -- --noisy-neighbour-only`.
 *
 * Its own fresh database on the bench's server; the API (the production bundle) and the delivery
 * worker run as their own processes; B's receiver and A's slow endpoint run in this process.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { spawn } from 'node:child_process';
import { PARTNER_BASE_PATH, SCOPES } from '@lop/contract';
import { connectDatabase, createTestDatabase, freePort, type DatabaseConnection } from '@lop/db';
import {
  appendEvents,
  attachDeliveryQueue,
  createClient,
  createKey,
  createSubscription,
  DataProtector,
  demoId,
  grantPrograms,
  loadConfig,
  openDeliveryQueue,
  seedDemo,
  webhookSettings,
  type EventDraft,
} from '@lop/domain';
import { runLoad, type LoadResult } from './http-load';
import type { FloodFigures, FloodSettings } from './flood-creates';
import { REPO_ROOT, startService, type ServiceProcess } from './processes';

export interface NoisyNeighbourOptions {
  serverUrl: string;
  /** The API entry point (the bundle `npm run bench` builds). */
  apiEntry: string;
  apiNodeOptions: string;
  logLevel: string;
  poolSize: number;
  /** Seconds per phase. */
  seconds: number;
  /** B's GET rate (requests/s) and order rate (orders/s, one webhook each). */
  readRate: number;
  orderRate: number;
  floodConnections: number;
  floodKeys: number;
  /** PARTNER_CREATE_ORDER_RATE_LIMIT of the run: per client and environment, per minute. */
  createBudget: number;
  deadLetters: number;
  /** How long A's endpoint takes to answer, in ms. */
  slowAnswerMs: number;
  /** PARTNER_EVENTS_WAITING_PER_CLIENT of the run: the waiting reads A holds in (c). */
  waitingPerClient: number;
  say: (line: string) => void;
}

/** What client B saw in one phase. Latencies in milliseconds. */
export interface NeighbourPhase {
  reads: LoadResult;
  webhooks: { orders: number; delivered: number; p50: number; p99: number; max: number };
  /** B's creates by status (0: no answer). */
  createStatuses: Record<string, number>;
  /** B's failures: GETs not answered 200, creates not answered 201, webhooks not received. */
  errors: number;
}


export interface RecoverFigures {
  calls: number;
  replayed: number;
  statusCodes: Record<string, number>;
  slowestRefusalMs: number | null;
  slowestCallMs: number;
  /** From the first recover call to the end of B's measurement. */
  seconds: number;
}

export interface WaitingReadFigures {
  /** A's GET /v1/events?wait answers by status, and how many were held (unanswered for over 2 s) when the phase ended. */
  statusCodes: Record<string, number>;
  heldAtEnd: number;
  slowestRefusalMs: number | null;
}

export interface NoisyNeighbourResults {
  settings: Omit<NoisyNeighbourOptions, 'say' | 'serverUrl' | 'apiEntry'>;
  solo: NeighbourPhase;
  createFlood: NeighbourPhase & { readP99Ratio: number; webhookP99Ratio: number; a: FloodFigures };
  recover: NeighbourPhase & { readP99Ratio: number; webhookP99Ratio: number; a: RecoverFigures };
  waitingReads: NeighbourPhase & { readP99Ratio: number; webhookP99Ratio: number; a: WaitingReadFigures };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);

/** B's receiver (answers at once, records when each order's webhook arrived) and A's slow endpoint. */
function startReceivers(slowAnswerMs: number) {
  const received = new Map<string, number>();
  const slowTimers = new Set<NodeJS.Timeout>();
  let slowHits = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/slow') {
        slowHits++;
        const timer = setTimeout(() => (slowTimers.delete(timer), res.end('ok')), slowAnswerMs);
        slowTimers.add(timer);
        return;
      }
      const at = Date.now();
      try {
        const orderId = (JSON.parse(Buffer.concat(chunks).toString()) as { data?: { order_id?: string } }).data?.order_id;
        if (orderId && !received.has(orderId)) received.set(orderId, at);
      } catch {
        // not an event body: ignored
      }
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 60_000;
  return {
    received,
    slowHits: () => slowHits,
    listen: () => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`))),
    close: () => {
      for (const timer of slowTimers) clearTimeout(timer);
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Sets up clients A and B on the demo laboratory; A's dead letters are written as a past outage would leave them. */
async function setUp(database: DatabaseConnection, protector: DataProtector, receiverUrl: string, options: NoisyNeighbourOptions, databaseUrl: string) {
  const demo = await seedDemo(database.db);
  const programId = demoId('program:wellness-sbx');
  const itemId = demoId('item:wellness-sbx:CBC');
  const clientA = await createClient(database.db, demo.laboratory_id, 'Noisy Neighbour A');
  const clientB = await createClient(database.db, demo.laboratory_id, 'Quiet Neighbour B');
  for (const client of [clientA, clientB]) await grantPrograms(database.db, { clientId: client.client_id, environment: 'sandbox', programId });
  const keysA = [];
  for (let i = 0; i < options.floodKeys; i++) keysA.push((await createKey(database.db, { clientId: clientA.client_id, environment: 'sandbox', scopes: [...SCOPES] })).key);
  const keyB = (await createKey(database.db, { clientId: clientB.client_id, environment: 'sandbox', scopes: [...SCOPES] })).key;
  const destination = { allowLoopback: true, servicePorts: [] };
  await createSubscription(database.db, protector, { clientId: clientB.client_id, environment: 'sandbox', url: `${receiverUrl}/b`, eventTypes: ['order.created'] }, destination);

  // A's stream: events written before its endpoint existed (so no delivery is queued for them),
  // then one dead-lettered delivery per event, as seven failed attempts would have left them.
  const config = loadConfig({ PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true' });
  const sender = await openDeliveryQueue({ databaseUrl, settings: webhookSettings(config).queue, role: 'sender' });
  const detach = attachDeliveryQueue(sender);
  try {
    const stream = { clientId: clientA.client_id, environment: 'sandbox' as const };
    const draft = (): EventDraft => ({
      type: 'order.updated',
      occurredAt: new Date(),
      data: { order_id: randomUUID(), external_order_id: 'noisy', program_id: programId, client_id: clientA.client_id, environment: 'sandbox', lifecycle: 'active' },
    });
    for (let done = 0; done < options.deadLetters; done += 500) {
      const batch = Array.from({ length: Math.min(500, options.deadLetters - done) }, draft);
      await database.db.transaction((tx) => appendEvents(tx, stream, batch));
    }
  } finally {
    detach();
    await sender.boss.stop({ graceful: false });
  }
  const slow = await createSubscription(database.db, protector, { clientId: clientA.client_id, environment: 'sandbox', url: `${receiverUrl}/slow`, eventTypes: ['order.updated'] }, destination);
  await database.sql`
    insert into webhook_deliveries (subscription_id, event_id, kind, state, failure_reason, attempts_made, last_status_code, completed_at)
    select ${slow.subscription_id}, e.id, 'event', 'dead_lettered', 'attempts_exhausted', 7, 410, now()
    from events e where e.client_id = ${clientA.client_id} and e.environment = 'sandbox'`;
  return { programId, itemId, keysA, keyB, slowSubscriptionId: slow.subscription_id as string };
}

export async function measureNoisyNeighbour(options: NoisyNeighbourOptions): Promise<NoisyNeighbourResults> {
  const { say } = options;
  const database = await createTestDatabase(options.serverUrl, 'noisy');
  const receivers = startReceivers(options.slowAnswerMs);
  const receiverUrl = await receivers.listen();
  const services: ServiceProcess[] = [];
  const connection = connectDatabase(database.url, { max: 4, applicationName: 'bench-noisy-neighbour' });
  try {
    const encryptionKey = randomBytes(32).toString('base64');
    const protector = new DataProtector(Buffer.from(encryptionKey, 'base64'));
    say(`noisy neighbour: data (${options.deadLetters} dead letters of client A)`);
    const fx = await setUp(connection, protector, receiverUrl, options, database.url);
    const env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: options.logLevel,
      PARTNER_DB_POOL_SIZE: String(options.poolSize),
      PARTNER_ENCRYPTION_KEY: encryptionKey,
      PARTNER_CREATE_ORDER_RATE_LIMIT: String(options.createBudget),
      PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
      PARTNER_METRICS_PORT: '0',
      PARTNER_EVENTS_WAITING_PER_CLIENT: String(options.waitingPerClient),
    };
    const api = await startService(options.apiEntry, { ...env, NODE_OPTIONS: options.apiNodeOptions }, { port: await freePort(), readyPath: '/readyz' });
    services.push(api);
    const workerPort = await freePort();
    const worker = await startService('apps/delivery-worker/src/main.ts', { ...env, PARTNER_WORKER_METRICS_PORT: String(workerPort) }, { port: workerPort, readyPath: '/metrics' });
    services.push(worker);
    const base = api.url + PARTNER_BASE_PATH;

    const subject = async (key: string) => {
      const response = await fetch(`${base}/v1/subjects/noisy-subject`, { method: 'PUT', headers: { authorization: `Bearer ${key}` } });
      if (response.status !== 200) throw new Error(`PUT subject answered ${response.status}: ${await response.text()}`);
    };
    await subject(fx.keysA[0]);
    await subject(fx.keyB);
    const runId = randomBytes(3).toString('hex');
    let orderNumber = 0;
    const orderBody = (who: string) =>
      JSON.stringify({ external_order_id: `${who}-${runId}-${orderNumber++}`, program_id: fx.programId, item_id: fx.itemId, external_subject_id: 'noisy-subject', collection: 'in_person_draw', region: 'US-CA' });
    const createAs = (key: string, who: string) =>
      fetch(`${base}/v1/orders`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `${who}-${runId}-${orderNumber}` }, body: orderBody(who) });

    // B's orders to read.
    const ordersB: string[] = [];
    for (let i = 0; i < 20; i++) {
      const response = await createAs(fx.keyB, 'b-seed');
      if (response.status !== 201) throw new Error(`B's create answered ${response.status}: ${await response.text()}`);
      ordersB.push(((await response.json()) as { data: { order_id: string } }).data.order_id);
    }
    let nextRead = 0;
    const readRequest = () => ({ path: `${PARTNER_BASE_PATH}/v1/orders/${ordersB[nextRead++ % ordersB.length]}`, headers: { authorization: `Bearer ${fx.keyB}` } });

    /** B's fixed-rate reads and fixed-rate orders (each answered by a webhook), for `seconds`. */
    const neighbourB = async (label: string, seconds = options.seconds): Promise<NeighbourPhase> => {
      const createdAt = new Map<string, number>();
      const createStatuses: Record<string, number> = {};
      let createErrors = 0;
      const orders = Math.round(options.orderRate * seconds);
      const creating = (async () => {
        const startedAt = Date.now();
        const pending: Promise<void>[] = [];
        for (let i = 0; i < orders; i++) {
          const due = startedAt + (i * 1000) / options.orderRate;
          if (due > Date.now()) await sleep(due - Date.now());
          pending.push(
            createAs(fx.keyB, 'b').then(
              async (response) => {
                createStatuses[response.status] = (createStatuses[response.status] ?? 0) + 1;
                if (response.status !== 201) return void createErrors++;
                createdAt.set(((await response.json()) as { data: { order_id: string } }).data.order_id, Date.now());
              },
              () => {
                createStatuses[0] = (createStatuses[0] ?? 0) + 1;
                createErrors++;
              },
            ),
          );
        }
        await Promise.all(pending);
      })();
      const reads = await runLoad({ url: api.url, title: `B reads, ${label}`, seconds, connections: 8, rate: options.readRate, request: readRequest, expectStatus: 200 });
      await creating;
      // First attempts that have not arrived 30 s after the last order count as errors.
      const deadline = Date.now() + 30_000;
      while ([...createdAt.keys()].some((id) => !receivers.received.has(id)) && Date.now() < deadline) await sleep(100);
      const latencies = [...createdAt].filter(([id]) => receivers.received.has(id)).map(([id, at]) => Math.max(0, receivers.received.get(id)! - at));
      latencies.sort((a, b) => a - b);
      const lost = createdAt.size - latencies.length;
      return {
        reads,
        webhooks: { orders, delivered: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? 0 },
        createStatuses,
        errors: reads.failures + createErrors + lost,
      };
    };

    // A first phase runs on cold code (JIT, prepared statements, pools): it is not the baseline.
    say('noisy neighbour: warm-up (not recorded)');
    await neighbourB('warm-up', Math.min(5, options.seconds));
    say('noisy neighbour: B alone');
    const solo = await neighbourB('alone');

    say(`noisy neighbour: (a) A floods creates over ${options.floodKeys} keys at ${options.floodConnections} connections`);
    // In a process of its own (flood-creates.ts): B's load generator and receiver keep their event loop.
    const floodSettings: FloodSettings = { url: api.url, keys: fx.keysA, connections: options.floodConnections, seconds: options.seconds + 2, runId, programId: fx.programId, itemId: fx.itemId };
    const flooder = spawn(process.execPath, ['--import', 'tsx', 'tools/bench/flood-creates.ts', JSON.stringify(floodSettings)], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let floodOutput = '';
    flooder.stdout!.on('data', (chunk: Buffer) => (floodOutput += chunk.toString()));
    const flooded = new Promise<FloodFigures>((resolve, reject) =>
      flooder.once('exit', (code) => (code === 0 ? resolve(JSON.parse(floodOutput) as FloodFigures) : reject(new Error(`the create flood exited with ${code}`)))),
    );
    await sleep(1_500); // the flood is on before B starts (its process starts in well under a second)
    const duringFlood = await neighbourB('A floods creates');
    const a = await flooded;
    say(`  A: ${JSON.stringify(a.statusCodes)}, slowest refusal ${a.slowestRefusalMs} ms, slowest answer ${a.slowestAnswerMs} ms`);

    say(`noisy neighbour: (b) A recovers ${options.deadLetters} dead letters to an endpoint answering after ${options.slowAnswerMs / 1000} s`);
    const recoverStarted = Date.now();
    const recoverCodes: Record<string, number> = {};
    let replayed = 0;
    let calls = 0;
    let slowestCallMs = 0;
    let slowestRecoverRefusalMs: number | null = null;
    const recovering = (async () => {
      // Today's recover replays at most a few hundred per call: call until nothing is left (or the phase is long over).
      while (Date.now() - recoverStarted < 120_000) {
        const started = Date.now();
        const response = await fetch(`${api.url}/api/trpc/console.webhooks.recover`, {
          method: 'POST',
          headers: { authorization: `Bearer ${fx.keysA[0]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ subscription_id: fx.slowSubscriptionId, since: new Date(0).toISOString() }),
        });
        const ms = Date.now() - started;
        calls++;
        slowestCallMs = Math.max(slowestCallMs, ms);
        recoverCodes[response.status] = (recoverCodes[response.status] ?? 0) + 1;
        const body = (await response.json().catch(() => undefined)) as { result?: { data?: { data?: { replayed?: number } } } } | undefined;
        if (response.status !== 200) {
          slowestRecoverRefusalMs = Math.max(slowestRecoverRefusalMs ?? 0, ms);
          await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
          continue;
        }
        const n = body?.result?.data?.data?.replayed ?? 0;
        replayed += n;
        if (n === 0) break;
      }
    })();
    await sleep(1_000);
    const duringRecover = await neighbourB('A recovers dead letters');
    const recoverSeconds = (Date.now() - recoverStarted) / 1000;
    await recovering;
    const recover: RecoverFigures = { calls, replayed, statusCodes: recoverCodes, slowestRefusalMs: slowestRecoverRefusalMs, slowestCallMs, seconds: recoverSeconds };
    say(`  A: ${calls} recover calls ${JSON.stringify(recoverCodes)}, ${replayed} replays, slowest call ${slowestCallMs} ms; A's endpoint hit ${receivers.slowHits()} times`);

    say(`noisy neighbour: (c) A holds its ${options.waitingPerClient} waiting reads of GET /v1/events?wait=30, and ${options.waitingPerClient} more readers are refused and retry`);
    const holding = holdWaitingReads(base, fx.keysA[0], options.waitingPerClient * 2);
    await holding.started;
    await sleep(1_000);
    const duringWaits = await neighbourB('A holds waiting reads');
    const waits = await holding.stop();
    say(`  A: ${JSON.stringify(waits.statusCodes)}, ${waits.heldAtEnd} held at the end, slowest refusal ${waits.slowestRefusalMs} ms`);

    const ratio = (during: number, alone: number) => Number((during / Math.max(alone, 1)).toFixed(2));
    return {
      settings: {
        apiNodeOptions: options.apiNodeOptions,
        logLevel: options.logLevel,
        poolSize: options.poolSize,
        seconds: options.seconds,
        readRate: options.readRate,
        orderRate: options.orderRate,
        floodConnections: options.floodConnections,
        floodKeys: options.floodKeys,
        createBudget: options.createBudget,
        deadLetters: options.deadLetters,
        slowAnswerMs: options.slowAnswerMs,
        waitingPerClient: options.waitingPerClient,
      },
      solo,
      createFlood: { ...duringFlood, readP99Ratio: ratio(duringFlood.reads.p99, solo.reads.p99), webhookP99Ratio: ratio(duringFlood.webhooks.p99, solo.webhooks.p99), a },
      recover: { ...duringRecover, readP99Ratio: ratio(duringRecover.reads.p99, solo.reads.p99), webhookP99Ratio: ratio(duringRecover.webhooks.p99, solo.webhooks.p99), a: recover },
      waitingReads: { ...duringWaits, readP99Ratio: ratio(duringWaits.reads.p99, solo.reads.p99), webhookP99Ratio: ratio(duringWaits.webhooks.p99, solo.webhooks.p99), a: waits },
    };
  } finally {
    // The worker is stopped hard (its in-flight attempts are A's slow answers), the API gracefully.
    const [api, worker] = services;
    if (worker && worker.child.exitCode === null && worker.child.signalCode === null) {
      const exited = new Promise((resolve) => worker.child.once('exit', resolve));
      worker.child.kill('SIGKILL');
      await exited;
    }
    await api?.stop().catch(() => undefined);
    await receivers.close();
    await connection.close();
    await database.drop();
  }
}

/**
 * `readers` loops of GET /v1/events?wait=30 from the end of A's stream, each sent again as soon as
 * it is answered (A's stream gets no events meanwhile: each is held to its deadline or until
 * stopped); a 429 is retried after its Retry-After, as a well-behaved partner would.
 */
function holdWaitingReads(base: string, key: string, readers: number) {
  const statusCodes: Record<string, number> = {};
  // When each unanswered read was sent: one answered 429 is answered at once, a held one is not.
  const inFlight = new Set<{ sent: number }>();
  let slowestRefusalMs: number | null = null;
  const stop = new AbortController();
  const get = (query: string) => fetch(`${base}/v1/events${query}`, { headers: { authorization: `Bearer ${key}` }, signal: stop.signal });
  const started = (async () => {
    let cursor = '';
    for (;;) {
      const page = ((await (await get(`?limit=500${cursor ? `&cursor=${cursor}` : ''}`)).json()) as { data: { next_cursor: string; has_more: boolean } }).data;
      cursor = page.next_cursor;
      if (!page.has_more) return cursor;
    }
  })();
  const loops = (async () => {
    const cursor = await started;
    await Promise.all(
      Array.from({ length: readers }, async () => {
        while (!stop.signal.aborted) {
          const read = { sent: Date.now() };
          inFlight.add(read);
          try {
            const response = await get(`?cursor=${cursor}&wait=30`);
            await response.arrayBuffer();
            statusCodes[response.status] = (statusCodes[response.status] ?? 0) + 1;
            inFlight.delete(read);
            if (response.status === 429) {
              slowestRefusalMs = Math.max(slowestRefusalMs ?? 0, Date.now() - read.sent);
              await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
            }
          } catch {
            inFlight.delete(read);
          }
        }
      }),
    );
  })();
  return {
    started,
    stop: async (): Promise<WaitingReadFigures> => {
      const heldAtEnd = [...inFlight].filter((read) => Date.now() - read.sent > 2_000).length;
      stop.abort();
      await loops;
      return { statusCodes, heldAtEnd, slowestRefusalMs };
    },
  };
}

/** The markdown lines of the section. */
export function noisyNeighbourMarkdown(r: NoisyNeighbourResults): string[] {
  const phase = (name: string, p: NeighbourPhase) =>
    `| ${name} | ${p.reads.p50} / ${p.reads.p99} ms | ${p.webhooks.p50} / ${p.webhooks.p99} ms (${p.webhooks.delivered} of ${p.webhooks.orders}) | ${p.errors} (GETs ${JSON.stringify(p.reads.statusCodes)}, creates ${JSON.stringify(p.createStatuses)}) |`;
  const refusal = (ms: number | null) => (ms === null ? 'none refused' : `${ms} ms`);
  return [
    `### Noisy neighbour`,
    '',
    `Client B reads its orders at ${r.settings.readRate} req/s and creates ${r.settings.orderRate} orders/s (a webhook each), ${r.settings.seconds} s per phase; API pool ${r.settings.poolSize}; create budget ${r.settings.createBudget} per client and environment per minute.`,
    '',
    '| phase | B GET p50 / p99 | B first webhook p50 / p99 | B errors |',
    '|---|---|---|---|',
    phase('B alone', r.solo),
    phase(`(a) A floods creates, ${r.settings.floodKeys} keys × ${r.settings.floodConnections} connections`, r.createFlood),
    phase(`(b) A recovers ${r.settings.deadLetters.toLocaleString('en-US')} dead letters (endpoint answers after ${r.settings.slowAnswerMs / 1000} s)`, r.recover),
    ...(r.waitingReads ? [phase(`(c) A holds its ${r.settings.waitingPerClient} waiting reads (GET /v1/events?wait=30), ${r.settings.waitingPerClient} more refused and retrying`, r.waitingReads)] : []),
    '',
    `Targets (2 cores): readP99Ratio ≤ 1.5, webhookP99Ratio ≤ 2, A's refusals within 1 s, 0 errors for B.`,
    '',
    `(a) readP99Ratio ${r.createFlood.readP99Ratio}, webhookP99Ratio ${r.createFlood.webhookP99Ratio}; A: ${r.createFlood.a.requests} requests ${JSON.stringify(r.createFlood.a.statusCodes)}, slowest refusal ${refusal(r.createFlood.a.slowestRefusalMs)}, slowest answer ${r.createFlood.a.slowestAnswerMs} ms.`,
    `(b) readP99Ratio ${r.recover.readP99Ratio}, webhookP99Ratio ${r.recover.webhookP99Ratio}; A: ${r.recover.a.calls} recover calls ${JSON.stringify(r.recover.a.statusCodes)}, ${r.recover.a.replayed} replays, slowest refusal ${refusal(r.recover.a.slowestRefusalMs)}, slowest call ${r.recover.a.slowestCallMs} ms.`,
    // Results written before (c) existed have no waitingReads.
    ...(r.waitingReads
      ? [
          `(c) readP99Ratio ${r.waitingReads.readP99Ratio}, webhookP99Ratio ${r.waitingReads.webhookP99Ratio}; A: ${JSON.stringify(r.waitingReads.a.statusCodes)}, ${r.waitingReads.a.heldAtEnd} held at the end, slowest refusal ${refusal(r.waitingReads.a.slowestRefusalMs)}.`,
        ]
      : []),
    '',
  ];
}
