/**
 * `npm run bench -- --capacity`: the figures the capacity model (capacity-model.ts, docs/capacity.md)
 * is made of, measured on this machine (issue 32, item 3):
 *
 *  - CPU time per request of the API process, the delivery worker process and PostgreSQL's
 *    processes, and WAL bytes per request, for GET /v1/orders/{id}, a full page of
 *    GET /v1/events (500 events), a caught-up poll of GET /v1/events (no new events), POST
 *    /v1/orders, the laboratory's writes (the sandbox simulator drives orders through the same
 *    laboratory operations: per event written) and webhook delivery end to end (the worker posting
 *    to a receiver in this process). Each workload runs at a fixed, moderate rate for `seconds`;
 *    each process's CPU is read from /proc before and after, less what it used idle in the same time.
 *  - Bytes per order, event, delivery and attempt at scale: a history of production orders loaded
 *    in SQL (load-data.ts) and a delivery history copied from a delivery the worker really made
 *    (delivery-history.ts); table (with TOAST) and index bytes summed over partitions (tableBytes).
 *  - Replica lag under the write load, on a streaming replica attached for it (replica-lag.ts).
 *
 * PostgreSQL is a cluster of its own (the embedded PostgreSQL in a temporary folder), so every
 * CPU second of its processes and every WAL byte in the window is this bench's: on a shared server
 * neither could be told apart from other databases' work.
 */
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { PARTNER_BASE_PATH } from '@lop/contract';
import postgres from 'postgres';
import { connectDatabase, createTestDatabase, freePort, type Sql } from '@lop/db';
import { startEmbeddedPrimary, startStreamingReplica } from '@lop/db/testing/replica';
import { createSubscription, DataProtector, encodeCursor } from '@lop/domain';
import { startReceiver } from '@lop/testing';
import { runLoad } from './http-load';
import { BENCH_ITEM_ID, BENCH_PROGRAM_ID, loadBenchData } from './load-data';
import { cpuTimeOf, startService, type ServiceProcess } from './processes';
import { createOrderRequests, getOrderRequests, type BenchRequest } from './requests';
import { sampleServerCpu, type ServerCpu } from './server-cpu';
import { generateDeliveryHistory } from './delivery-history';
import { measureReplicaLag, type ReplicaLagFigures } from './replica-lag';
import type { MeasuredFigures, TableBytes, WorkloadCost } from './capacity-model';

export interface CapacityOptions {
  orders: number;
  otherClients: number;
  seconds: number;
  rates: { get: number; page: number; poll: number; create: number; simulate: number };
  /** Deliveries in the generated delivery history (at most one per event). */
  deliveries: number;
  /** Attach a streaming replica and measure its lag under the write load (a base backup: a copy of the data folder). */
  replica: boolean;
  apiEntry: string;
  workerEntry: string;
  apiNodeOptions: string;
  logLevel: string;
  poolSize: number;
  say: (line: string) => void;
}

/** One workload at a fixed rate: what it cost per request (or per event/delivery, see `unit`). */
export interface WorkloadRun extends WorkloadCost {
  title: string;
  unit: string;
  rate: number;
  seconds: number;
  /** Units done in the window (requests answered as expected, events written, deliveries received). */
  units: number;
  requests: number;
  failures: number;
  p50: number;
  p99: number;
  /** Whole pages logged (pg_stat_wal.wal_fpi) per unit: the part of the WAL a checkpoint's timing decides. */
  fullPageImages: number;
}

export interface CapacityResults {
  date: string;
  machine: { cpus: number; cpuModel: string; node: string; postgres: string; loadAverageBefore: number[]; loadAverageAfter: number[] };
  settings: Omit<CapacityOptions, 'say'>;
  data: { orders: number; events: number; eventsPerOrder: number; clients: number; loadSeconds: number; deliveries: number; attempts: number; historySeconds: number };
  idle: { apiMsPerSecond: number; workerMsPerSecond: number; databaseMsPerSecond: number; walBytesPerSecond: number };
  workloads: WorkloadRun[];
  bytes: TableBytes[];
  replicaLag: ReplicaLagFigures;
  /** The figures the model takes, derived from the above. */
  figures: MeasuredFigures;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (n: number, digits = 3) => Number(n.toFixed(digits));

export async function runCapacity(options: CapacityOptions): Promise<CapacityResults> {
  const { say } = options;
  const loadAverageBefore = loadavg();
  // A private cluster (libs/db/src/testing/replica.ts), so a streaming replica can be attached to it.
  const cluster = await startEmbeddedPrimary();
  say(`capacity: a private PostgreSQL cluster in ${cluster.dataDir}`);
  const monitor = postgres(cluster.url, { max: 1, onnotice: () => undefined });
  const services: ServiceProcess[] = [];
  const receiver = await startReceiver();
  let serverCpu: ServerCpu | null = null;
  try {
    const [{ server_version }] = await monitor<{ server_version: string }[]>`show server_version`;
    const database = await createTestDatabase(cluster.url, 'capacity');
    const connection = connectDatabase(database.url, { max: 4, applicationName: 'bench-capacity' });
    try {
      say(`capacity: loading ${options.orders.toLocaleString('en-US')} orders (${options.otherClients} other clients)`);
      const data = await loadBenchData(connection, { orders: options.orders, otherClients: options.otherClients, exclusive: true, environment: 'production', log: (line) => say(`  data: ${line}`) });
      const [{ events }] = await connection.sql<{ events: number }[]>`select count(*)::float8 as events from events`;
      const [{ orders }] = await connection.sql<{ orders: number }[]>`select count(*)::float8 as orders from orders`;
      // Orders and events are sized as loaded (before the workloads add their few rows).
      const historyBytes = await tableBytes(connection.sql, ['orders', 'specimens', 'result_versions', 'order_exceptions', 'events']);

      const masterKey = randomBytes(32);
      const env = {
        DATABASE_URL: database.url,
        LOG_LEVEL: options.logLevel,
        PARTNER_DB_POOL_SIZE: String(options.poolSize),
        PARTNER_ENCRYPTION_KEY: masterKey.toString('base64'),
        PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
        PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
        PARTNER_METRICS_PORT: '0',
      };
      const api = await startService(options.apiEntry, { ...env, NODE_OPTIONS: options.apiNodeOptions }, { port: await freePort(), readyPath: '/readyz' });
      services.push(api);
      const workerPort = await freePort();
      const worker = await startService(options.workerEntry, { ...env, PARTNER_WORKER_METRICS_PORT: String(workerPort) }, { port: workerPort, readyPath: '/metrics' });
      services.push(worker);
      serverCpu = await sampleServerCpu(monitor);
      if (!serverCpu) throw new Error('capacity: cannot read the PostgreSQL processes’ CPU from /proc');
      const cpu = serverCpu;
      const walLsn = async () => (await monitor<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`)[0].lsn;
      const walBytes = async (from: string, to: string) => (await monitor<{ n: number }[]>`select pg_wal_lsn_diff(${to}, ${from})::float8 as n`)[0].n;

      /** CPU of the three sides and WAL written while `work` runs. */
      const fullPageImages = async () => (await monitor<{ n: number }[]>`select wal_fpi::float8 as n from pg_stat_wal`)[0].n;

      /**
       * CPU of the three sides and WAL written while `work` runs. Every window starts right after a
       * CHECKPOINT (taken before it, outside it): the first change of each page after a checkpoint
       * logs the whole page (8 kB), so WAL per write depends on where in the checkpoint cycle it
       * falls; measured from the start of a cycle, every workload is on the same, high, side.
       */
      const window = async <T>(work: () => Promise<T>) => {
        await monitor`checkpoint`;
        const before = { api: cpuTimeOf(api.pid) ?? 0, worker: cpuTimeOf(worker.pid) ?? 0, db: await cpu.read(), wal: await walLsn(), fpi: await fullPageImages(), at: performance.now() };
        const result = await work();
        const after = { api: cpuTimeOf(api.pid) ?? 0, worker: cpuTimeOf(worker.pid) ?? 0, db: await cpu.read(), wal: await walLsn(), fpi: await fullPageImages(), at: performance.now() };
        const seconds = (after.at - before.at) / 1000;
        return {
          result,
          seconds,
          apiMs: after.api - before.api,
          workerMs: after.worker - before.worker,
          databaseMs: after.db - before.db,
          walBytes: await walBytes(before.wal, after.wal),
          fullPageImages: after.fpi - before.fpi,
        };
      };

      const key = data.key;
      const load = (title: string, rate: number, request: () => BenchRequest, expectStatus: number, seconds = options.seconds, connections = Math.min(16, Math.max(2, Math.ceil(rate / 10)))) =>
        runLoad({ url: api.url, title, seconds, connections, rate, request, expectStatus });

      say('capacity: warm-up');
      await load('warm-up GET', options.rates.get, getOrderRequests(data), 200, 3);
      await load('warm-up create', options.rates.create, createOrderRequests(data), 201, 3);

      say('capacity: idle baseline');
      const idleWindow = await window(() => sleep(Math.max(3000, options.seconds * 300)));
      const idle = {
        apiMsPerSecond: idleWindow.apiMs / idleWindow.seconds,
        workerMsPerSecond: idleWindow.workerMs / idleWindow.seconds,
        databaseMsPerSecond: idleWindow.databaseMs / idleWindow.seconds,
        walBytesPerSecond: idleWindow.walBytes / idleWindow.seconds,
      };
      say(`  idle: API ${idle.apiMsPerSecond.toFixed(1)}, worker ${idle.workerMsPerSecond.toFixed(1)}, PostgreSQL ${idle.databaseMsPerSecond.toFixed(1)} ms of CPU a second; ${Math.round(idle.walBytesPerSecond)} WAL bytes a second`);

      const workloads: WorkloadRun[] = [];
      const record = (title: string, unit: string, rate: number, units: number, w: Awaited<ReturnType<typeof window>>, http: { total: number; failures: number; p50: number; p99: number; statusCodes?: Record<string, number> }) => {
        // A cost per request is only worth something if the requests did what they should.
        if (http.failures > Math.max(2, 0.05 * http.total)) throw new Error(`capacity: ${title}: ${http.failures} of ${http.total} requests failed (${JSON.stringify(http.statusCodes ?? {})})`);
        const per = (ms: number, idleRate: number) => round(Math.max(0, ms - idleRate * w.seconds) / Math.max(1, units));
        const run: WorkloadRun = {
          title,
          unit,
          rate,
          seconds: round(w.seconds, 1),
          units,
          requests: http.total,
          failures: http.failures,
          p50: http.p50,
          p99: http.p99,
          apiMs: per(w.apiMs, idle.apiMsPerSecond),
          workerMs: per(w.workerMs, idle.workerMsPerSecond),
          databaseMs: per(w.databaseMs, idle.databaseMsPerSecond),
          walBytes: Math.round(Math.max(0, w.walBytes - idle.walBytesPerSecond * w.seconds) / Math.max(1, units)),
          fullPageImages: round(w.fullPageImages / Math.max(1, units), 2),
        };
        workloads.push(run);
        say(`  ${title}: ${units} ${unit}s; per ${unit}: API ${run.apiMs} ms, worker ${run.workerMs} ms, PostgreSQL ${run.databaseMs} ms of CPU, ${run.walBytes} WAL bytes (p50 ${run.p50} ms, p99 ${run.p99} ms, ${run.failures} failures)`);
        return run;
      };

      // Reads.
      say('capacity: GET /v1/orders/{id}');
      const gets = await window(() => load('GET order', options.rates.get, getOrderRequests(data), 200));
      record('GET /v1/orders/{id}', 'request', options.rates.get, gets.result.total - gets.result.failures, gets, gets.result);

      // Cursors as the API hands them out (bound to the stream, sealed with the service's key).
      const protector = new DataProtector(masterKey);
      const cursorAt = (sequence: number) => encodeCursor(protector, { clientId: data.caller.clientId, environment: data.caller.environment }, sequence);
      const eventsPage = (sequence: number) => {
        const path = `${PARTNER_BASE_PATH}/v1/events?limit=500&cursor=${cursorAt(sequence)}`;
        return () => ({ path, headers: { authorization: `Bearer ${key}` } });
      };
      const middle = Math.max(0, Math.floor(data.eventCount / 2) - 500);
      say('capacity: GET /v1/events, a full page of 500 events');
      const pages = await window(() => load('GET /v1/events page', options.rates.page, eventsPage(middle), 200));
      record('GET /v1/events, a page of 500 events', 'request', options.rates.page, pages.result.total - pages.result.failures, pages, pages.result);
      say('capacity: GET /v1/events, a caught-up poll (no new events)');
      const polls = await window(() => load('GET /v1/events poll', options.rates.poll, eventsPage(data.eventCount), 200));
      record('GET /v1/events, a caught-up poll', 'request', options.rates.poll, polls.result.total - polls.result.failures, polls, polls.result);

      // Writes: production creates (what partners' creates cost), then the same in the sandbox,
      // whose requests are also written to the sandbox request log: the difference is that log's
      // cost, and the sandbox orders are the ones the simulator can drive.
      say('capacity: POST /v1/orders (production key)');
      const creates = await window(() => load('POST /v1/orders', options.rates.create, createOrderRequests(data), 201));
      record('POST /v1/orders', 'request', options.rates.create, creates.result.total - creates.result.failures, creates, creates.result);
      const sandbox = { ...data, key: data.sandboxKey, programId: BENCH_PROGRAM_ID, itemId: BENCH_ITEM_ID };
      const sandboxCaller = { clientId: data.caller.clientId, environment: 'sandbox' as const };
      say('capacity: POST /v1/orders (sandbox key)');
      const createStart = (await connection.sql<{ now: string }[]>`select now()::text as now`)[0].now;
      const sandboxCreates = await window(() => load('POST /v1/orders, sandbox', options.rates.create, createOrderRequests(sandbox), 201));
      const sandboxCreateRun = record(
        'POST /v1/orders, sandbox key',
        'request',
        options.rates.create,
        sandboxCreates.result.total - sandboxCreates.result.failures,
        sandboxCreates,
        sandboxCreates.result,
      );

      // The laboratory's writes: the simulator applies the laboratory operations to the sandbox orders just created.
      const created = (
        await connection.sql<{ id: string }[]>`select id from orders where client_id = ${sandboxCaller.clientId} and environment = 'sandbox' and created_at >= ${createStart}::timestamptz order by created_at`
      ).map((r) => r.id);
      let next = 0;
      const simulate = () => ({
        method: 'POST' as const,
        path: `${PARTNER_BASE_PATH}/v1/sandbox/orders/${created[next++ % Math.max(1, created.length)]}/simulate`,
        headers: { authorization: `Bearer ${data.sandboxKey}`, 'content-type': 'application/json', 'idempotency-key': `capacity-sim-${randomBytes(6).toString('hex')}` },
        body: '{"scenario":"happy_path"}',
      });
      const lastSequence = async () =>
        (await connection.sql<{ n: number }[]>`select last_sequence::float8 as n from event_streams where client_id = ${sandboxCaller.clientId} and environment = 'sandbox'`)[0].n;
      say('capacity: laboratory writes (sandbox simulator, happy_path), per event');
      const sequenceBefore = await lastSequence();
      const simulateSeconds = Math.min(options.seconds, Math.max(1, Math.floor(created.length / options.rates.simulate)));
      // One at a time: simulations of one client's orders meet at its stream's counter, and on a busy
      // machine two at once wait out the lock timeout there (429), which is not what is measured here.
      const simulations = await window(() => load('simulate happy_path', options.rates.simulate, simulate, 200, simulateSeconds, 1));
      const eventsWritten = (await lastSequence()) - sequenceBefore;
      const eventRun = record('laboratory writes (simulator), per event', 'event', options.rates.simulate, eventsWritten, simulations, simulations.result);

      // Webhook delivery end to end: the same sandbox creates, now with an endpoint for
      // order.created (a loopback receiver is allowed for sandbox endpoints only); the worker posts
      // each to the receiver. The delivery's share is the difference from the sandbox creates.
      await createSubscription(
        connection.db,
        protector,
        { clientId: sandboxCaller.clientId, environment: 'sandbox', url: receiver.url('/capacity'), eventTypes: ['order.created'] },
        { allowLoopback: true, servicePorts: [] },
      );
      say('capacity: POST /v1/orders (sandbox) with a webhook endpoint, delivered by the worker');
      const receivedBefore = receiver.requests.length;
      const delivered = await window(async () => {
        const result = await load('POST /v1/orders + webhook', options.rates.create, createOrderRequests(sandbox), 201);
        const expected = result.total - result.failures;
        await receiver.waitFor((all) => all.length - receivedBefore >= expected, 60_000, 'the deliveries').catch(() => undefined);
        return result;
      });
      const deliveries = receiver.requests.length - receivedBefore;
      if (deliveries < delivered.result.total - delivered.result.failures) {
        const states = await connection.sql`select state, last_error_class, last_status_code, count(*)::int as n from webhook_deliveries group by 1, 2, 3`;

        throw new Error(`capacity: ${deliveries} of ${delivered.result.total} webhooks received: ${JSON.stringify(states)}; worker: ${worker.stderr().slice(-1500)}`);
      }
      const withWebhook = record('POST /v1/orders, sandbox key, with one webhook delivery', 'request', options.rates.create, delivered.result.total - delivered.result.failures, delivered, delivered.result);
      const deliveryRun: WorkloadRun = {
        ...withWebhook,
        title: 'webhook delivery (the difference)',
        unit: 'delivery',
        units: deliveries,
        apiMs: round(Math.max(0, withWebhook.apiMs - sandboxCreateRun.apiMs)),
        workerMs: round(Math.max(0, delivered.workerMs - idle.workerMsPerSecond * delivered.seconds) / Math.max(1, deliveries)),
        databaseMs: round(Math.max(0, withWebhook.databaseMs - sandboxCreateRun.databaseMs)),
        walBytes: Math.max(0, withWebhook.walBytes - sandboxCreateRun.walBytes),
        fullPageImages: round(Math.max(0, withWebhook.fullPageImages - sandboxCreateRun.fullPageImages), 2),
      };
      workloads.push(deliveryRun);
      say(`  webhook delivery: ${deliveries} received; per delivery: worker ${deliveryRun.workerMs} ms, PostgreSQL ${deliveryRun.databaseMs} ms, ${deliveryRun.walBytes} WAL bytes`);

      // Replica lag under the write load: a streaming replica attached now (so its replay and the
      // primary's WAL sender were not in the figures above), then creates at the highest rate
      // this machine takes (8 connections, no fixed rate), its lag sampled every 100 ms.
      serverCpu.stop();
      if (options.replica) say('capacity: replica lag under the write load (a streaming replica, creates at peak)');
      const replicaLag: ReplicaLagFigures = options.replica
        ? await replicaLagUnderLoad(cluster, async () => {
            const result = await runLoad({ url: api.url, title: 'POST /v1/orders at peak', seconds: options.seconds, connections: 8, request: createOrderRequests(data), expectStatus: 201 });
            return { orders: result.total - result.failures };
          }, say)
        : { measured: false, reason: 'skipped (--capacity-skip-replica)' };

      for (const service of services.splice(0)) await service.stop();

      say(`capacity: delivery history (${options.deliveries.toLocaleString('en-US')} deliveries)`);
      const history = await generateDeliveryHistory(connection.sql, { deliveries: options.deliveries, retryShare: 0.1, log: (line) => say(`  ${line}`) });
      const bytes = [...historyBytes, ...(await tableBytes(connection.sql, ['webhook_deliveries', 'webhook_delivery_attempts']))];
      const figures = deriveFigures({ orders, events, workloads, bytes, eventRun });
      return {
        date: new Date().toISOString(),
        machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.versions.node, postgres: server_version, loadAverageBefore, loadAverageAfter: loadavg() },
        settings: { ...options, say: undefined } as Omit<CapacityOptions, 'say'>,
        data: {
          orders,
          events,
          eventsPerOrder: round(events / orders, 2),
          clients: 1 + data.others.length,
          loadSeconds: Number(Object.values(data.timings).reduce((a, b) => a + b, 0).toFixed(1)),
          deliveries: history.deliveries,
          attempts: history.attempts,
          historySeconds: history.seconds,
        },
        idle: { apiMsPerSecond: round(idle.apiMsPerSecond, 2), workerMsPerSecond: round(idle.workerMsPerSecond, 2), databaseMsPerSecond: round(idle.databaseMsPerSecond, 2), walBytesPerSecond: Math.round(idle.walBytesPerSecond) },
        workloads,
        bytes,
        replicaLag,
        figures,
      };
    } finally {
      await connection.close();
      await database.drop().catch(() => undefined);
    }
  } finally {
    serverCpu?.stop();
    for (const service of services) await service.stop().catch(() => undefined);
    await receiver.close();
    await monitor.end({ timeout: 1 });
    await cluster.stop();
  }
}

async function replicaLagUnderLoad(primary: Awaited<ReturnType<typeof startEmbeddedPrimary>>, writeLoad: () => Promise<{ orders: number }>, say: (line: string) => void): Promise<ReplicaLagFigures> {
  let replica: Awaited<ReturnType<typeof startStreamingReplica>> | undefined;
  try {
    replica = await startStreamingReplica(primary);
    await replica.waitForReplay(300_000);
  } catch (error) {
    await replica?.stop().catch(() => undefined);
    return { measured: false, reason: `no streaming replica could be made here: ${(error as Error).message}` };
  }
  const replicaSql = postgres(replica.url, { max: 1, onnotice: () => undefined });
  const primarySql = postgres(primary.url, { max: 1, onnotice: () => undefined });
  try {
    return await measureReplicaLag({ primary: primarySql, replica: replicaSql, writeLoad, say });
  } finally {
    await replicaSql.end({ timeout: 1 });
    await primarySql.end({ timeout: 1 });
    await replica.stop();
  }
}

/**
 * Bytes of each table with its indexes and TOAST, summed over its partitions when it is
 * partitioned (pg_partition_tree returns a plain table itself), and its exact row count.
 */
export async function tableBytes(sql: Sql, tables: string[]): Promise<TableBytes[]> {
  const out: TableBytes[] = [];
  for (const table of tables) {
    // pg_partition_tree lists a partitioned table's partitions (the leaves hold the rows) and
    // nothing for a plain table, which is then its own single partition.
    const [size] = await sql<{ tableBytes: number; indexBytes: number; partitions: number }[]>`
      with leaves as (
        select relid from pg_partition_tree(${table}::regclass) where isleaf
        union all select ${table}::regclass where not exists (select 1 from pg_partition_tree(${table}::regclass))
      )
      select coalesce(sum(pg_table_size(relid)), 0)::float8 as "tableBytes", coalesce(sum(pg_indexes_size(relid)), 0)::float8 as "indexBytes", count(*)::int as partitions
      from leaves`;
    const [{ rows }] = await sql.unsafe<{ rows: number }[]>(`select count(*)::float8 as rows from ${table}`);
    out.push({ table, rows, tableBytes: size.tableBytes, indexBytes: size.indexBytes, partitions: size.partitions });
  }
  return out;
}

function deriveFigures(r: { orders: number; events: number; workloads: WorkloadRun[]; bytes: TableBytes[]; eventRun: WorkloadRun }): MeasuredFigures {
  const cost = (title: string): WorkloadCost => {
    const w = r.workloads.find((x) => x.title === title)!;
    return { apiMs: w.apiMs, workerMs: w.workerMs, databaseMs: w.databaseMs, walBytes: w.walBytes };
  };
  const total = (tables: string[]) => r.bytes.filter((b) => tables.includes(b.table)).reduce((sum, b) => sum + b.tableBytes + b.indexBytes, 0);
  const rows = (table: string) => r.bytes.find((b) => b.table === table)?.rows ?? 0;
  return {
    get: cost('GET /v1/orders/{id}'),
    page: cost('GET /v1/events, a page of 500 events'),
    poll: cost('GET /v1/events, a caught-up poll'),
    create: cost('POST /v1/orders'),
    eventWrite: cost(r.eventRun.title),
    delivery: cost('webhook delivery (the difference)'),
    bytesPerOrder: Math.round(total(['orders', 'specimens', 'result_versions', 'order_exceptions']) / Math.max(1, rows('orders'))),
    bytesPerEvent: Math.round(total(['events']) / Math.max(1, rows('events'))),
    bytesPerDelivery: Math.round(total(['webhook_deliveries']) / Math.max(1, rows('webhook_deliveries'))),
    bytesPerAttempt: Math.round(total(['webhook_delivery_attempts']) / Math.max(1, rows('webhook_delivery_attempts'))),
    eventsPerOrder: round(r.events / Math.max(1, r.orders), 2),
  };
}
