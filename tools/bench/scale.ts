/**
 * `npm run bench -- --scale`: how the partner API behaves as a laboratory's history grows. For each
 * size (10 k, 100 k and 1 M orders by default) a fresh database is loaded (tools/bench/load-data.ts,
 * generated in PostgreSQL), the API is started on it, and the same measurements are taken: GET
 * order and create order at a fixed rate (the same at every size, so latencies compare) and at
 * peak, paging the bench client's stream from its oldest cursor, its middle and its tail, and a
 * small client's stream among many, with the load time, the table and index sizes and the plans of
 * the hot queries (EXPLAIN ANALYZE).
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { connectDatabase, createTestDatabase, freePort, type Sql } from '@lop/db';
import { DataProtector, encodeCursor, PARTNER_BASE_PATH } from '@lop/domain';
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
  /** Fixed request rates; omitted = half of the peak measured at the first size. */
  getRate?: number;
  createRate?: number;
  /** Events read per stream position (at least this many pages of 500 are timed, a short stream read again). */
  pageEvents: number;
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
}

const SIZED_TABLES = ['orders', 'specimens', 'result_versions', 'events', 'idempotency_keys'];

export async function runScale(options: ScaleOptions): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  let getRate = options.getRate;
  let createRate = options.createRate;
  for (const size of options.sizes) {
    const before = loadavg();
    options.say(`scale: ${size.toLocaleString('en-US')} orders (load average ${before.map((n) => n.toFixed(2)).join(' ')})`);
    const database = await createTestDatabase(options.serverUrl, 'bench');
    try {
      const connection = connectDatabase(database.url, { max: 4, applicationName: 'bench-loader' });
      let data: BenchData;
      let sizes: TableSize[];
      let plans: Record<string, string>;
      let events: number;
      try {
        data = await loadBenchData(connection, { orders: size, otherClients: options.otherClients, exclusive: true, log: (line) => options.say(`  data: ${line}`) });
        sizes = await tableSizes(connection.sql);
        [{ events }] = await connection.sql<{ events: number }[]>`select coalesce(sum(last_sequence), 0)::float8 as events from event_streams`;
        plans = await queryPlans(connection.sql, data);
        // The load leaves gigabytes of dirty pages at 1 M orders; written back by the next
        // checkpoint while the API is measured, they stalled reads (GET p99 139 ms against 35 ms at
        // 10 k, 2026-11-28T0436Z). The question is how the service behaves with that history, not
        // while the machine flushes it: the flush happens here, before any measurement.
        await connection.sql`checkpoint`;
      } finally {
        await connection.close();
      }
      // The service's key, so the bench can mint the cursor the API would hand out at a position.
      const masterKey = randomBytes(32);
      const cursorProtector = new DataProtector(masterKey);
      const cursorAt = (sequence: number) => encodeCursor(cursorProtector, { clientId: data.caller.clientId, environment: data.caller.environment }, sequence);
      const api = await startService(
        options.api.entry,
        {
          DATABASE_URL: database.url,
          LOG_LEVEL: options.api.logLevel,
          PARTNER_DB_POOL_SIZE: String(options.api.poolSize),
          PARTNER_ENCRYPTION_KEY: masterKey.toString('base64'),
          PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
          PARTNER_METRICS_PORT: String(await freePort()),
          NODE_OPTIONS: options.api.nodeOptions,
        },
        { port: await freePort(), readyPath: '/readyz', nodeArgs: options.api.nodeArgs },
      );
      try {
        const load = (title: string, request: ReturnType<typeof getOrderRequests>, expectStatus: number, rate?: number, seconds = options.seconds) =>
          runLoad({ url: api.url, title, seconds, connections: options.connections, rate, request, expectStatus, pid: api.pid });
        const gets = getOrderRequests(data);
        const creates = createOrderRequests(data);
        await load('warm-up GET', gets, 200, undefined, Math.max(2, Math.round(options.seconds / 4)));
        const getPeak = await load('GET order, peak', gets, 200);
        getRate ??= Math.max(1, Math.round(getPeak.requestsPerSecond / 2));
        const getFixed = await load(`GET order at ${getRate} req/s`, gets, 200, getRate);
        await load('warm-up create', creates, 201, undefined, Math.max(2, Math.round(options.seconds / 4)));
        const createPeak = await load('create order, peak', creates, 201);
        createRate ??= Math.max(1, Math.round(createPeak.requestsPerSecond / 2));
        const createFixed = await load(`create order at ${createRate} req/s`, creates, 201, createRate);

        const base = api.url + PARTNER_BASE_PATH;
        const n = data.eventCount;
        const span = options.pageEvents;
        // Each position is timed over the same number of pages (a short stream is read again), after
        // a warm-up read, so a percentile compares like with like across sizes.
        const pages = Math.ceil(span / 500);
        await readStream(base, data.key, { afterSequence: Math.floor(n / 3), maxEvents: 5_000, cursorAt });
        const oldest = await readStream(base, data.key, { afterSequence: 0, maxEvents: span, minPages: pages });
        const middle = await readStream(base, data.key, { afterSequence: Math.floor(n / 2), maxEvents: span, minPages: pages, cursorAt });
        // The tail: a reader that has caught up reads the last few pages, again and again.
        const tail = await readStream(base, data.key, { afterSequence: Math.max(0, n - 5_000), maxEvents: span, minPages: pages, cursorAt });
        // One client among many: the smallest stream, its rows spread over the whole table.
        const small = [...data.others].sort((a, b) => a.eventCount - b.eventCount)[0];
        const filtered = small
          ? { ...(await readStream(base, small.key, { afterSequence: 0, maxEvents: span, minPages: pages })), clientEvents: small.eventCount }
          : { ...(await readStream(base, data.key, { afterSequence: 0, maxEvents: span, minPages: pages })), clientEvents: n };
        options.say(
          `  GET p50/p99 ${getFixed.p50}/${getFixed.p99} ms at ${getRate}/s; create ${createFixed.p50}/${createFixed.p99} ms at ${createRate}/s; paging ${Math.round(oldest.eventsPerSecond)}/${Math.round(middle.eventsPerSecond)}/${Math.round(tail.eventsPerSecond)} events/s; filtered ${Math.round(filtered.eventsPerSecond)} events/s`,
        );
        rows.push({
          orders: size,
          events,
          benchClient: { orders: data.orderIds.length, events: n },
          otherClients: data.others.length,
          loadAverage: { before, after: loadavg() },
          load: { seconds: Number(Object.values(data.timings).reduce((a, b) => a + b, 0).toFixed(1)), phases: data.timings },
          sizes,
          get: { rate: getRate, fixed: getFixed, peak: getPeak },
          create: { rate: createRate, fixed: createFixed, peak: createPeak },
          paging: { oldest, middle, tail },
          filtered,
          plans,
        });
      } finally {
        await api.stop();
      }
    } finally {
      if (options.keepDatabases) options.say(`  database kept: ${database.url}`);
      else await database.drop();
    }
  }
  return rows;
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
    ...['orders', 'specimens', 'result_versions', 'events'].map((t) =>
      line(`${t}: table + indexes`, (r) => {
        const s = table(t)(r);
        return s ? `${mb(s.tableBytes)} + ${mb(s.indexBytes)}` : '–';
      }),
    ),
    '',
    `Failed or unexpected responses: ${rows.map((r) => `${fmt(r.orders)}: ${r.get.fixed.failures + r.get.peak.failures + r.create.fixed.failures + r.create.peak.failures}`).join(', ')}.`,
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
