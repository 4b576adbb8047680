/**
 * `npm run bench -- --scale`: how the partner API behaves as a laboratory's history grows. For each
 * size (10 k, 100 k and 1 M orders by default) a fresh database is loaded (tools/bench/load-data.ts,
 * generated in PostgreSQL) and an API is started on it; then, in rounds that take the sizes in
 * turn, the same measurements are taken: GET order and create order at a fixed rate (the same at
 * every size, so latencies compare) and at peak, paging the bench client's stream from its oldest
 * cursor, its middle and its tail, and a small client's stream among many, with the load time, the
 * table and index sizes and the plans of the hot queries (EXPLAIN ANALYZE).
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { connectDatabase, createTestDatabase, freePort, type Sql } from '@lop/db';
import { DataProtector, encodeCursor } from '@lop/domain';
import { readStream, runLoad, type LoadResult, type StreamRead } from './http-load';
import { loadBenchData, type BenchData } from './load-data';
import { startService } from './processes';
import { createOrderRequests, getOrderRequests } from './requests';

export interface ScaleOptions {
  serverUrl: string;
  sizes: number[];
  otherClients: number;
  seconds: number;
  connections: number;
  /** Fixed request rates; omitted = half of the smallest peak the sizes reach in a calibration pass. */
  getRate?: number;
  createRate?: number;
  /** Events read per stream position (at least this many pages of 500 are timed, a short stream read again). */
  pageEvents: number;
  /** Rounds of measurements, the sizes in turn; each figure is the median of its rounds. */
  rounds: number;
  api: { entry: string; nodeOptions: string; nodeArgs: string[]; logLevel: string; poolSize: number };
  keepDatabases: boolean;
  say: (line: string) => void;
}

export interface TableSize {
  table: string;
  rows: number;
  tableBytes: number;
  indexBytes: number;
}

export interface ScaleRow {
  orders: number;
  /** Every client's events in the database. */
  events: number;
  benchClient: { orders: number; events: number };
  otherClients: number;
  loadAverage: { before: number[]; after: number[] };
  load: { seconds: number; phases: Record<string, number> };
  sizes: TableSize[];
  get: { rate: number; fixed: LoadResult; peak: LoadResult };
  create: { rate: number; fixed: LoadResult; peak: LoadResult };
  paging: { oldest: StreamRead; middle: StreamRead; tail: StreamRead };
  filtered: StreamRead & { clientEvents: number };
  plans: Record<string, string>;
  /** Every round's figures; the fields above hold each measure's median round. */
  rounds: ScaleRound[];
}

const SIZED_TABLES = ['orders', 'specimens', 'result_versions', 'events', 'idempotency_keys'];

/** One size's database, loaded and checkpointed, with an API running on it. */
interface PreparedSize {
  size: number;
  database: { url: string; drop(): Promise<void> };
  data: BenchData;
  sizes: TableSize[];
  plans: Record<string, string>;
  events: number;
  loadAverageBefore: number[];
  /** The service's key, so the bench can mint the cursor the API would hand out at a position. */
  masterKey: Buffer;
  cursorAt: (sequence: number) => string;
  api?: Awaited<ReturnType<typeof startService>>;
}

/** What one round measured at one size. */
export interface ScaleRound {
  round: number;
  loadAverage: { before: number[]; after: number[] };
  get: { fixed: LoadResult; peak: LoadResult };
  create: { fixed: LoadResult; peak: LoadResult };
  paging: { oldest: StreamRead; middle: StreamRead; tail: StreamRead };
  filtered: StreamRead;
  /** The first read of each span, before the timed one: in round 1, whatever the load left in the cache. */
  firstRead: { oldest: StreamRead; middle: StreamRead; filtered: StreamRead };
}

/** The middle element by `key` (the lower middle of an even count): a real measurement, not a blend of two. */
export function medianBy<T>(items: T[], key: (item: T) => number): T {
  const sorted = [...items].sort((a, b) => key(a) - key(b));
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/**
 * Every size is loaded first and keeps its database and API for the whole run; then the same
 * measurements are taken in `rounds` rounds, the sizes in turn (reversed every other round), and
 * each figure is the median of its rounds. Measured one size after the other, the machine's mood
 * moved between them: the same 1 M database answered GET at peak 2,162/s in one run and 1,059/s
 * in another (2026-12-01), more than the history's own effect.
 */
export async function runScale(options: ScaleOptions): Promise<ScaleRow[]> {
  const prepared: PreparedSize[] = [];
  try {
    for (const size of options.sizes) prepared.push(await prepareSize(options, size));
    for (const entry of prepared) entry.api = await startApi(options, entry);

    const load = (entry: PreparedSize, title: string, request: ReturnType<typeof getOrderRequests>, expectStatus: number, rate?: number, seconds = options.seconds) =>
      runLoad({ url: entry.api!.url, title, seconds, connections: options.connections, rate, request, expectStatus, pid: entry.api!.pid });
    const warmup = Math.max(2, Math.round(options.seconds / 4));

    // The fixed rates: half of the smallest peak any size reaches, so no size is measured as a queue.
    let getRate = options.getRate;
    let createRate = options.createRate;
    if (getRate === undefined || createRate === undefined) {
      const getPeaks: number[] = [];
      const createPeaks: number[] = [];
      for (const entry of prepared) {
        options.say(`scale: calibrating the fixed rates at ${entry.size.toLocaleString('en-US')} orders`);
        await load(entry, 'warm-up GET', getOrderRequests(entry.data), 200, undefined, warmup);
        getPeaks.push((await load(entry, 'GET order, peak (calibration)', getOrderRequests(entry.data), 200)).requestsPerSecond);
        await load(entry, 'warm-up create', createOrderRequests(entry.data), 201, undefined, warmup);
        createPeaks.push((await load(entry, 'create order, peak (calibration)', createOrderRequests(entry.data), 201)).requestsPerSecond);
      }
      getRate ??= Math.max(1, Math.round(Math.min(...getPeaks) / 2));
      createRate ??= Math.max(1, Math.round(Math.min(...createPeaks) / 2));
    }

    const rounds = new Map<number, ScaleRound[]>(prepared.map((entry) => [entry.size, []]));
    for (let round = 1; round <= options.rounds; round++) {
      const order = round % 2 === 1 ? prepared : [...prepared].reverse();
      for (const entry of order) {
        options.say(`scale: round ${round} of ${options.rounds}, ${entry.size.toLocaleString('en-US')} orders`);
        rounds.get(entry.size)!.push(await measureRound(options, entry, round, { getRate, createRate, load, warmup }));
      }
    }

    return prepared.map((entry) => {
      const measured = rounds.get(entry.size)!;
      const median = <T>(pick: (r: ScaleRound) => T, key: (value: T) => number) => medianBy(measured.map(pick), key);
      const byP99 = (r: LoadResult) => r.p99;
      const byPage = (r: StreamRead) => r.pageP99;
      const filtered = median((r) => r.filtered, byPage);
      const small = [...entry.data.others].sort((a, b) => a.eventCount - b.eventCount)[0];
      return {
        orders: entry.size,
        events: entry.events,
        benchClient: { orders: entry.data.orderIds.length, events: entry.data.eventCount },
        otherClients: entry.data.others.length,
        loadAverage: { before: entry.loadAverageBefore, after: measured.at(-1)!.loadAverage.after },
        load: { seconds: Number(Object.values(entry.data.timings).reduce((a, b) => a + b, 0).toFixed(1)), phases: entry.data.timings },
        sizes: entry.sizes,
        get: { rate: getRate, fixed: median((r) => r.get.fixed, byP99), peak: median((r) => r.get.peak, (r) => r.requestsPerSecond) },
        create: { rate: createRate, fixed: median((r) => r.create.fixed, byP99), peak: median((r) => r.create.peak, (r) => r.requestsPerSecond) },
        paging: { oldest: median((r) => r.paging.oldest, byPage), middle: median((r) => r.paging.middle, byPage), tail: median((r) => r.paging.tail, byPage) },
        filtered: { ...filtered, clientEvents: small?.eventCount ?? entry.data.eventCount },
        plans: entry.plans,
        rounds: measured,
      };
    });
  } finally {
    for (const entry of prepared) {
      await entry.api?.stop();
      if (options.keepDatabases) options.say(`  database kept: ${entry.database.url}`);
      else await entry.database.drop();
    }
  }
}

async function prepareSize(options: ScaleOptions, size: number): Promise<PreparedSize> {
  const loadAverageBefore = loadavg();
  options.say(`scale: loading ${size.toLocaleString('en-US')} orders (load average ${loadAverageBefore.map((n) => n.toFixed(2)).join(' ')})`);
  const database = await createTestDatabase(options.serverUrl, 'bench');
  const connection = connectDatabase(database.url, { max: 4, applicationName: 'bench-loader' });
  try {
    const data = await loadBenchData(connection, { orders: size, otherClients: options.otherClients, exclusive: true, log: (line) => options.say(`  data: ${line}`) });
    const sizes = await tableSizes(connection.sql);
    const [{ events }] = await connection.sql<{ events: number }[]>`select coalesce(sum(last_sequence), 0)::float8 as events from event_streams`;
    const plans = await queryPlans(connection.sql, data);
    // The load leaves gigabytes of dirty pages at 1 M orders; written back by the next
    // checkpoint while the API is measured, they stalled reads (GET p99 139 ms against 35 ms at
    // 10 k, 2026-11-28T0436Z). The question is how the service behaves with that history, not
    // while the machine flushes it: the flush happens here, before any measurement.
    await connection.sql`checkpoint`;
    const masterKey = randomBytes(32);
    const cursorProtector = new DataProtector(masterKey);
    const cursorAt = (sequence: number) => encodeCursor(cursorProtector, { clientId: data.caller.clientId, environment: data.caller.environment }, sequence);
    return { size, database, data, sizes, plans, events, loadAverageBefore, masterKey, cursorAt };
  } catch (error) {
    await database.drop().catch(() => undefined);
    throw error;
  } finally {
    await connection.close();
  }
}

async function startApi(options: ScaleOptions, entry: PreparedSize) {
  return startService(
    options.api.entry,
    {
      DATABASE_URL: entry.database.url,
      LOG_LEVEL: options.api.logLevel,
      PARTNER_DB_POOL_SIZE: String(options.api.poolSize),
      PARTNER_ENCRYPTION_KEY: entry.masterKey.toString('base64'),
      PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
      PARTNER_METRICS_PORT: String(await freePort()),
      NODE_OPTIONS: options.api.nodeOptions,
    },
    { port: await freePort(), readyPath: '/readyz', nodeArgs: options.api.nodeArgs },
  );
}

type Load = (entry: PreparedSize, title: string, request: ReturnType<typeof getOrderRequests>, expectStatus: number, rate?: number, seconds?: number) => Promise<LoadResult>;

async function measureRound(options: ScaleOptions, entry: PreparedSize, round: number, run: { getRate: number; createRate: number; load: Load; warmup: number }): Promise<ScaleRound> {
  const before = loadavg();
  const { data, cursorAt } = entry;
  const gets = getOrderRequests(data);
  const creates = createOrderRequests(data);
  await run.load(entry, 'warm-up GET', gets, 200, undefined, run.warmup);
  const getPeak = await run.load(entry, 'GET order, peak', gets, 200);
  const getFixed = await run.load(entry, `GET order at ${run.getRate} req/s`, gets, 200, run.getRate);
  await run.load(entry, 'warm-up create', creates, 201, undefined, run.warmup);
  const createPeak = await run.load(entry, 'create order, peak', creates, 201);
  const createFixed = await run.load(entry, `create order at ${run.createRate} req/s`, creates, 201, run.createRate);

  const base = entry.api!.url + PARTNER_BASE_PATH;
  const n = data.eventCount;
  const span = options.pageEvents;
  // Each position is timed over the same number of pages (a short stream is read again), after
  // a warm-up read, so a percentile compares like with like across sizes.
  const pages = Math.ceil(span / 500);
  await readStream(base, data.key, { afterSequence: Math.floor(n / 3), maxEvents: 5_000, cursorAt });
  // Each span is read twice and the second read is timed: at 1 M orders the database (15 GB) is
  // larger than the cache, and which span the load left on disk decided which position looked
  // slow (oldest 1.35 x and middle 1.19 x in one run, 0.90 x and 1.43 x in the next, 2026-12-02),
  // while at 10 k all of it is in memory. Timed warm, both sizes do the same work; the first read,
  // reported beside it, is what a reader of cold history meets.
  const twice = async (key: string, from: { afterSequence: number; cursorAt?: typeof cursorAt }) => {
    const first = await readStream(base, key, { ...from, maxEvents: span, minPages: pages });
    return { first, timed: await readStream(base, key, { ...from, maxEvents: span, minPages: pages }) };
  };
  const oldest = await twice(data.key, { afterSequence: 0 });
  const middle = await twice(data.key, { afterSequence: Math.floor(n / 2), cursorAt });
  // The tail: a reader that has caught up reads the last few pages, again and again.
  const tail = await readStream(base, data.key, { afterSequence: Math.max(0, n - 5_000), maxEvents: span, minPages: pages, cursorAt });
  // One client among many: the smallest stream, its rows spread over the whole table.
  const small = [...data.others].sort((a, b) => a.eventCount - b.eventCount)[0];
  const filtered = await twice(small?.key ?? data.key, { afterSequence: 0 });
  options.say(
    `  GET p50/p99 ${getFixed.p50}/${getFixed.p99} ms at ${run.getRate}/s; create ${createFixed.p50}/${createFixed.p99} ms at ${run.createRate}/s; page p99 ${oldest.timed.pageP99}/${middle.timed.pageP99}/${tail.pageP99} ms (first read ${oldest.first.pageP99}/${middle.first.pageP99}); small client ${filtered.timed.pageP99} ms (first read ${filtered.first.pageP99})`,
  );
  return {
    round,
    loadAverage: { before, after: loadavg() },
    get: { fixed: getFixed, peak: getPeak },
    create: { fixed: createFixed, peak: createPeak },
    paging: { oldest: oldest.timed, middle: middle.timed, tail },
    filtered: filtered.timed,
    firstRead: { oldest: oldest.first, middle: middle.first, filtered: filtered.first },
  };
}

/** Rows and bytes per table; a partitioned one (events) summed over its partitions (a plain table is its own one leaf). */
async function tableSizes(sql: Sql): Promise<TableSize[]> {
  return sql<TableSize[]>`
    select c.relname as table, sum(greatest(l.reltuples, 0))::bigint::float8 as rows,
           sum(pg_table_size(l.oid))::float8 as "tableBytes", sum(pg_indexes_size(l.oid))::float8 as "indexBytes"
    from pg_class c cross join lateral (select relid from pg_partition_tree(c.oid) where isleaf union select c.oid where c.relkind = 'r') t
    join pg_class l on l.oid = t.relid
    where c.relname = any(${SIZED_TABLES}) and c.relkind in ('r', 'p') and c.relnamespace = 'public'::regnamespace
    group by c.relname order by array_position(${SIZED_TABLES}::text[], c.relname::text)`;
}

/**
 * EXPLAIN ANALYZE of the statements behind the measured routes, with values from the loaded data:
 * the order read GET /v1/orders/{id} runs (libs/domain/src/orders/orders.ts), a page of the stream
 * from its middle and a page of a small client's stream (events/stream.ts), and the insert a
 * create makes (rolled back).
 */
async function queryPlans(sql: Sql, data: BenchData): Promise<Record<string, string>> {
  const c = data.caller;
  const middle = Math.floor(data.eventCount / 2);
  const small = [...data.others].sort((a, b) => a.eventCount - b.eventCount)[0]?.clientId ?? c.clientId;
  const orderId = data.orderIds[Math.floor(data.orderIds.length / 2)];
  const statements: Record<string, string> = {
    'GET /v1/orders/{id}': `
      select o.*, (select coalesce(json_agg(s order by s.created_at, s.id), '[]'::json) from specimens s where s.order_id = o.id) as specimens
      from orders o where o.id = '${orderId}' and o.client_id = '${c.clientId}' and o.environment = 'sandbox' and o.laboratory_id = '${c.laboratoryId}'`,
    'GET /v1/events, page from the middle': `
      select * from events where client_id = '${c.clientId}' and environment = 'sandbox' and sequence > ${middle} order by sequence asc limit 501`,
    'GET /v1/events, a small client among many': `
      select * from events where client_id = '${small}' and environment = 'sandbox' and sequence > 0 order by sequence asc limit 501`,
    'POST /v1/orders, the order insert (rolled back)': `
      insert into orders (laboratory_id, client_id, environment, external_order_id, program_id, item_id, external_subject_id, collection, synthetic, lifecycle_detail)
      values ('${c.laboratoryId}', '${c.clientId}', 'sandbox', 'plan-${randomBytes(4).toString('hex')}', '${data.programId}', '${data.itemId}', '${data.subject}', 'in_person_draw', true, 'received')
      on conflict do nothing`,
  };
  const plans: Record<string, string> = {};
  for (const [name, statement] of Object.entries(statements)) {
    const lines = await sql
      .begin(async (tx) => {
        const rows = await tx.unsafe<{ 'QUERY PLAN': string }[]>(`explain (analyze, buffers, costs off) ${statement}`);
        // Rolls the insert back; the reads need no commit either.
        throw Object.assign(new Error('rollback'), { plan: rows.map((r) => r['QUERY PLAN']) });
      })
      .catch((error: { plan?: string[] }) => {
        if (!error.plan) throw error;
        return error.plan;
      });
    plans[name] = lines.join('\n');
  }
  return plans;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toLocaleString('en-US', { maximumFractionDigits: bytes < 100 * 1024 * 1024 ? 1 : 0 })} MB`;

/** The scale table (one column per size, the largest ÷ the smallest for latencies) and the plans. */
export function scaleMarkdown(date: string, rows: ScaleRow[], note: string): string {
  const first = rows[0];
  const lastRow = rows.at(-1)!;
  const cols = rows.map((r) => `${fmt(r.orders)} orders`);
  const vs = (pick: (r: ScaleRow) => number) => (rows.length > 1 && pick(first) > 0 ? `${(pick(lastRow) / pick(first)).toFixed(2)} ×` : '');
  const line = (label: string, cell: (r: ScaleRow) => string, ratio = '') => `| ${label} | ${rows.map(cell).join(' | ')} | ${ratio} |`;
  const table = (t: string) => (r: ScaleRow) => r.sizes.find((s) => s.table === t);
  const lines = [
    `## Scale benchmark ${date}`,
    '',
    note,
    '',
    `| measure | ${cols.join(' | ')} | ${rows.length > 1 ? `${fmt(lastRow.orders)} ÷ ${fmt(first.orders)}` : ''} |`,
    `|---|${rows.map(() => '---|').join('')}---|`,
    line('load average (1 / 5 / 15 min) before → after', (r) => `${r.loadAverage.before.map((n) => n.toFixed(1)).join(' / ')} → ${r.loadAverage.after.map((n) => n.toFixed(1)).join(' / ')}`),
    line('events in the database (all clients)', (r) => fmt(r.events)),
    line("bench client's orders / events", (r) => `${fmt(r.benchClient.orders)} / ${fmt(r.benchClient.events)}`),
    line('load time (generate, indexes, vacuum)', (r) => `${r.load.seconds} s (${r.load.phases.copy ?? 0} / ${r.load.phases.indexes ?? 0} / ${r.load.phases.vacuum ?? 0} s)`),
    line(`GET /v1/orders/{id} at a fixed rate: p50 / p99`, (r) => `${r.get.fixed.p50} / ${r.get.fixed.p99} ms at ${fmt(r.get.rate)}/s`, vs((r) => r.get.fixed.p99)),
    line('GET /v1/orders/{id} at peak: requests/s (p99)', (r) => `${fmt(r.get.peak.requestsPerSecond)} (${r.get.peak.p99} ms)`, vs((r) => r.get.peak.requestsPerSecond)),
    line('POST /v1/orders at a fixed rate: p50 / p99', (r) => `${r.create.fixed.p50} / ${r.create.fixed.p99} ms at ${fmt(r.create.rate)}/s`, vs((r) => r.create.fixed.p99)),
    line('POST /v1/orders at peak: orders/s (p99)', (r) => `${fmt(r.create.peak.requestsPerSecond)} (${r.create.peak.p99} ms)`, vs((r) => r.create.peak.requestsPerSecond)),
    line('GET /v1/events from the oldest cursor: events/s (page p99)', (r) => `${fmt(r.paging.oldest.eventsPerSecond)} (${r.paging.oldest.pageP99} ms)`, vs((r) => r.paging.oldest.pageP99)),
    line('GET /v1/events from the middle: events/s (page p99)', (r) => `${fmt(r.paging.middle.eventsPerSecond)} (${r.paging.middle.pageP99} ms)`, vs((r) => r.paging.middle.pageP99)),
    line('GET /v1/events at the tail: events/s (page p99)', (r) => `${fmt(r.paging.tail.eventsPerSecond)} (${r.paging.tail.pageP99} ms)`, vs((r) => r.paging.tail.pageP99)),
    line('GET /v1/events, one small client among many: events/s (page p99)', (r) => `${fmt(r.filtered.eventsPerSecond)} (${r.filtered.pageP99} ms), its stream ${fmt(r.filtered.clientEvents)} events`, vs((r) => r.filtered.pageP99)),
    line(
      'first read of those spans in round 1, as the load left the cache: page p99 oldest / middle / small client',
      (r) => `${r.rounds[0].firstRead.oldest.pageP99} / ${r.rounds[0].firstRead.middle.pageP99} / ${r.rounds[0].firstRead.filtered.pageP99} ms`,
    ),
    ...['orders', 'specimens', 'result_versions', 'events'].map((t) =>
      line(`${t}: table + indexes`, (r) => {
        const s = table(t)(r);
        return s ? `${mb(s.tableBytes)} + ${mb(s.indexBytes)}` : '–';
      }),
    ),
    '',
    `Each figure is the median of ${first.rounds.length} round${first.rounds.length === 1 ? '' : 's'}, the sizes measured in turn (reversed every other round). Per round, p99 in ms:`,
    '',
    `| p99 per round | ${cols.join(' | ')} |`,
    `|---|${rows.map(() => '---|').join('')}`,
    ...(
      [
        ['GET order at the fixed rate', (r: ScaleRound) => r.get.fixed.p99],
        ['create at the fixed rate', (r: ScaleRound) => r.create.fixed.p99],
        ['page from the oldest cursor', (r: ScaleRound) => r.paging.oldest.pageP99],
        ['page from the middle', (r: ScaleRound) => r.paging.middle.pageP99],
        ['page at the tail', (r: ScaleRound) => r.paging.tail.pageP99],
        ['page of the small client', (r: ScaleRound) => r.filtered.pageP99],
        ['first read from the oldest cursor', (r: ScaleRound) => r.firstRead.oldest.pageP99],
        ['first read from the middle', (r: ScaleRound) => r.firstRead.middle.pageP99],
        ['first read of the small client', (r: ScaleRound) => r.firstRead.filtered.pageP99],
      ] as const
    ).map(([label, pick]) => `| ${label} | ${rows.map((r) => r.rounds.map(pick).join(' / ')).join(' | ')} |`),
    '',
    `Failed or unexpected responses (all rounds): ${rows.map((r) => `${fmt(r.orders)}: ${r.rounds.reduce((sum, x) => sum + x.get.fixed.failures + x.get.peak.failures + x.create.fixed.failures + x.create.peak.failures, 0)}`).join(', ')}.`,
    '',
    '### Plans (EXPLAIN ANALYZE, BUFFERS) at each size',
    '',
  ];
  for (const r of rows) {
    lines.push(`#### ${fmt(r.orders)} orders`, '');
    for (const [name, plan] of Object.entries(r.plans)) lines.push(`${name}:`, '', '```', plan, '```', '');
  }
  return lines.join('\n');
}
