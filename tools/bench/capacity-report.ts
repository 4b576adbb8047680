import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CapacityResults } from './capacity';
import { DEFAULT_SETTINGS, PAGE_EVENTS, perEventRead, predictBytes, project, singlePrimaryLimit, size, type MeasuredFigures, type PartnerMix } from './capacity-model';

/** The partner mixes docs/capacity.md works through (and every capacity report prints). */
export const EXAMPLE_MIXES: PartnerMix[] = [
  { name: 'one laboratory, a few partners', ordersPerDay: 2_000, clients: 5, pollingClients: 2, pollIntervalSeconds: 60, webhookEndpointsPerClient: 1, readsPerOrder: 3, peakFactor: 3 },
  { name: 'a regional network', ordersPerDay: 50_000, clients: 40, pollingClients: 20, pollIntervalSeconds: 10, webhookEndpointsPerClient: 1, readsPerOrder: 4, peakFactor: 3 },
  { name: 'read-heavy: 1,000 partners poll every second', ordersPerDay: 50_000, clients: 1_000, pollingClients: 1_000, pollIntervalSeconds: 1, webhookEndpointsPerClient: 0, readsPerOrder: 20, peakFactor: 3 },
  { name: 'national scale', ordersPerDay: 1_000_000, clients: 200, pollingClients: 150, pollIntervalSeconds: 5, webhookEndpointsPerClient: 2, readsPerOrder: 4, peakFactor: 4 },
];

/** The check against a run of another size: this run's storage predicted from the reference's bytes per row. */
export interface StorageCheck {
  reference: { date: string; orders: number; events: number; file: string };
  rows: { table: string; rows: number; predicted: number; measured: number; ratio: number }[];
}

export function storageCheck(results: CapacityResults, reference: CapacityResults, file: string): StorageCheck {
  const measured = (tables: string[]) => results.bytes.filter((b) => tables.includes(b.table)).reduce((s, b) => s + b.tableBytes + b.indexBytes, 0);
  const rowsOf = (table: string) => results.bytes.find((b) => b.table === table)?.rows ?? 0;
  const counts = { orders: rowsOf('orders'), events: rowsOf('events'), deliveries: rowsOf('webhook_deliveries'), attempts: rowsOf('webhook_delivery_attempts') };
  const predicted = predictBytes(reference.figures, counts);
  const row = (table: string, rows: number, p: number, m: number) => ({ table, rows, predicted: Math.round(p), measured: Math.round(m), ratio: Number((m / Math.max(1, p)).toFixed(3)) });
  const orderTables = ['orders', 'specimens', 'result_versions', 'order_exceptions'];
  const all = [...orderTables, 'events', 'webhook_deliveries', 'webhook_delivery_attempts'];
  return {
    reference: { date: reference.date, orders: reference.data.orders, events: reference.data.events, file },
    rows: [
      row('orders (with specimens, results, exceptions)', counts.orders, predicted.orders, measured(orderTables)),
      row('events', counts.events, predicted.events, measured(['events'])),
      row('webhook_deliveries', counts.deliveries, predicted.deliveries, measured(['webhook_deliveries'])),
      row('webhook_delivery_attempts', counts.attempts, predicted.attempts, measured(['webhook_delivery_attempts'])),
      row('all', counts.events, predicted.total, measured(all)),
    ],
  };
}

/** Capacity results in `folder`, newest first. */
export function capacityResultFiles(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((name) => name.endsWith('-capacity.json'))
    .sort()
    .reverse()
    .map((name) => join(folder, name));
}

export const readCapacity = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as CapacityResults & { check?: StorageCheck };

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
export function bytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${fmt(n, n < 10 && i > 0 ? 2 : n < 100 && i > 0 ? 1 : 0)} ${units[i]}`;
}
const ms = (n: number) => fmt(n, n < 0.1 ? 3 : 2);
const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;

/** The measured figures: cost per request and bytes per row. */
export function figuresTable(r: CapacityResults): string {
  const lines = [
    row(['workload (fixed rate)', 'unit', 'units', 'API CPU ms', 'worker CPU ms', 'PostgreSQL CPU ms', 'WAL bytes (whole pages)', 'p50 / p99 ms']),
    row(['---', '---', '---:', '---:', '---:', '---:', '---:', '---:']),
    ...r.workloads.map((w) =>
      row([
        `${w.title}${w.unit === 'delivery' ? '' : ` at ${fmt(w.rate)}/s`}`,
        w.unit,
        fmt(w.units),
        ms(w.apiMs),
        ms(w.workerMs),
        ms(w.databaseMs),
        `${fmt(w.walBytes)}${w.fullPageImages === undefined ? '' : ` (${fmt(w.fullPageImages, 1)})`}`,
        w.unit === 'delivery' ? '' : `${w.p50} / ${w.p99}`,
      ]),
    ),
  ];
  const read = perEventRead(r.figures);
  lines.push(row([`one more event read in a page (page − poll) ÷ ${PAGE_EVENTS}`, 'event', '', ms(read.apiMs), ms(read.workerMs), ms(read.databaseMs), fmt(read.walBytes), '']));
  return lines.join('\n');
}

export function bytesTable(r: CapacityResults): string {
  const per: Record<string, string> = {
    orders: 'order',
    specimens: 'order',
    result_versions: 'order',
    order_exceptions: 'order',
    events: 'event',
    webhook_deliveries: 'delivery',
    webhook_delivery_attempts: 'attempt',
  };
  const f = r.figures;
  return [
    row(['table', 'rows', 'partitions', 'table (with TOAST)', 'indexes', 'bytes per row']),
    row(['---', '---:', '---:', '---:', '---:', '---:']),
    ...r.bytes.map((b) => row([b.table, fmt(b.rows), b.partitions, bytes(b.tableBytes), bytes(b.indexBytes), b.rows > 0 ? fmt((b.tableBytes + b.indexBytes) / b.rows) : '–'])),
    '',
    `Per ${per.orders} (orders, specimens, result versions, exceptions together): **${fmt(f.bytesPerOrder)} bytes**; per event **${fmt(f.bytesPerEvent)}**; per delivery **${fmt(f.bytesPerDelivery)}**; per attempt **${fmt(f.bytesPerAttempt)}**; ${fmt(f.eventsPerOrder, 2)} events per order.`,
  ].join('\n');
}

export function replicaLagText(r: CapacityResults): string {
  const l = r.replicaLag;
  if (!l.measured) return `Replica lag under load: not measured (${l.reason}).`;
  return (
    `A streaming replica of the bench's primary (libs/db/src/testing/replica.ts) while partners create orders as fast as this machine takes them ` +
    `(${fmt(l.ordersPerSecond, 1)} orders a second for ${l.seconds} s, ${bytes(l.walBytesPerSecond)} of WAL a second; ${l.samples} samples): ` +
    `behind by p50 ${bytes(l.lagBytes.p50)} / ${l.lagSeconds.p50} s, p99 ${bytes(l.lagBytes.p99)} / ${l.lagSeconds.p99} s, at most ${bytes(l.lagBytes.max)} / ${l.lagSeconds.max} s; ` +
    `caught up ${l.catchUpSeconds} s after the load ended.`
  );
}

/** The model applied to the example mixes. */
export function examplesTable(f: MeasuredFigures): string {
  const sized = EXAMPLE_MIXES.map((m) => size(f, m));
  const col = (label: string, cell: (s: ReturnType<typeof size>) => string) => row([label, ...sized.map(cell)]);
  return [
    row(['', ...sized.map((s) => s.mix.name)]),
    row(['---', ...sized.map(() => '---:')]),
    col('orders a day (peak factor)', (s) => `${fmt(s.mix.ordersPerDay)} (× ${s.mix.peakFactor})`),
    col('clients; polling every', (s) => `${fmt(s.mix.clients)}; ${fmt(s.mix.pollingClients)} every ${s.mix.pollIntervalSeconds} s`),
    col('webhook endpoints per client; GETs per order', (s) => `${s.mix.webhookEndpointsPerClient}; ${s.mix.readsPerOrder}`),
    col('at peak: creates / event writes / deliveries a second', (s) => `${fmt(s.rates.createsPerSecond, 1)} / ${fmt(s.rates.eventWritesPerSecond, 1)} / ${fmt(s.rates.deliveriesPerSecond, 1)}`),
    col('at peak: GETs / polls / events read a second', (s) => `${fmt(s.rates.getsPerSecond, 1)} / ${fmt(s.rates.pollsPerSecond, 1)} / ${fmt(s.rates.eventsReadPerSecond, 1)}`),
    col('API cores (processes)', (s) => `${fmt(s.cores.api, 2)} (${s.plan.apiProcesses})`),
    col('laboratory operations cores', (s) => fmt(s.cores.laboratory, 2)),
    col('worker cores (processes)', (s) => `${fmt(s.cores.worker, 2)} (${s.plan.workerProcesses})`),
    col('PostgreSQL cores: writes + reads', (s) => `${fmt(s.cores.databaseWrites, 2)} + ${fmt(s.cores.databaseReads, 2)}`),
    col('primary: vCPU / RAM', (s) => `${s.plan.primaryVcpu} / ${s.plan.primaryRamGb} GB`),
    col('WAL at peak; a day', (s) => `${bytes(s.wal.peakBytesPerSecond)}/s; ${bytes(s.wal.bytesPerDay)}`),
    col('history growth a month (orders + events)', (s) => bytes(s.storage.historyBytesPerMonth)),
    col(`deliveries + attempts kept (${DEFAULT_SETTINGS.webhookRetentionDays} days)`, (s) => bytes(s.storage.deliveryBytesRetained)),
    col('read replica', (s) => (s.replica.advised ? `**yes**: ${s.replica.reason}` : `no: ${s.replica.reason}`)),
  ].join('\n');
}

/** One primary's write limit for each example mix's shape. */
export function writeLimitText(f: MeasuredFigures): string {
  const lines = [row(['mix shape', 'PostgreSQL CPU per order', 'WAL per order', `orders/s on ${DEFAULT_SETTINGS.maxPrimaryVcpu} vCPU`, `orders/s at ${bytes(DEFAULT_SETTINGS.walLimitBytesPerSecond)}/s of WAL`, 'limit: orders a day (events/s at peak)']), row(['---', '---:', '---:', '---:', '---:', '---:'])];
  for (const m of EXAMPLE_MIXES) {
    const l = singlePrimaryLimit(f, m);
    lines.push(
      row([
        `${m.name} (${m.webhookEndpointsPerClient} endpoint${m.webhookEndpointsPerClient === 1 ? '' : 's'}, peak × ${m.peakFactor})`,
        `${ms(l.perOrder.databaseMs)} ms`,
        bytes(l.perOrder.walBytes),
        fmt(l.ordersPerSecondByCpu),
        fmt(l.ordersPerSecondByWal),
        `**${fmt(l.ordersPerDay)}** (${fmt(l.eventsPerSecond)}), bound by ${l.bound === 'cpu' ? 'CPU' : 'WAL'}`,
      ]),
    );
  }
  return lines.join('\n');
}

/** 1 B events for each example mix: history bytes, the events' indexes, monthly partitions. */
export function projectionTable(r: CapacityResults, events = 1e9): string {
  const ev = r.bytes.find((b) => b.table === 'events');
  const indexShare = ev ? ev.indexBytes / Math.max(1, ev.tableBytes + ev.indexBytes) : 0;
  const lines = [row(['mix', 'orders', 'orders + events with indexes', "events' indexes", 'months to reach it (monthly partitions)']), row(['---', '---:', '---:', '---:', '---:'])];
  for (const m of EXAMPLE_MIXES) {
    const p = project(r.figures, m, events, indexShare);
    lines.push(row([m.name, fmt(p.orders), bytes(p.historyBytes), bytes(p.eventIndexBytes), `${fmt(p.months, p.months < 10 ? 1 : 0)} (${fmt(Math.ceil(p.months))})`]));
  }
  return lines.join('\n');
}

export function checkTable(check: StorageCheck | undefined): string {
  if (!check) return 'No run of another size to check against: run `npm run bench -- --capacity --capacity-orders 1000000` after a default run.';
  return [
    `Predicted from the bytes per row of the run of ${check.reference.date} (\`${check.reference.file}\`: ${fmt(check.reference.orders)} orders, ${fmt(check.reference.events)} events), measured in this one:`,
    '',
    row(['table', 'rows here', 'predicted', 'measured', 'measured ÷ predicted']),
    row(['---', '---:', '---:', '---:', '---:']),
    ...check.rows.map((c) => row([c.table, fmt(c.rows), bytes(c.predicted), bytes(c.measured), `${c.ratio.toFixed(2)} ×`])),
  ].join('\n');
}

export function runLine(r: CapacityResults): string {
  return (
    `Run of ${r.date}: ${r.machine.cpus} × ${r.machine.cpuModel}, Node ${r.machine.node}, PostgreSQL ${r.machine.postgres} (a private cluster); ` +
    `load average ${r.machine.loadAverageBefore.map((n) => n.toFixed(1)).join(' / ')} before, ${r.machine.loadAverageAfter.map((n) => n.toFixed(1)).join(' / ')} after. ` +
    `History: ${fmt(r.data.orders)} orders, ${fmt(r.data.events)} events (${r.data.clients} clients), ${fmt(r.data.deliveries)} deliveries, ${fmt(r.data.attempts)} attempts. ` +
    `Each workload ${r.settings.seconds} s at a fixed rate; idle CPU (API ${r.idle.apiMsPerSecond}, worker ${r.idle.workerMsPerSecond}, PostgreSQL ${r.idle.databaseMsPerSecond} ms a second) and idle WAL (${fmt(r.idle.walBytesPerSecond)} bytes a second) subtracted.`
  );
}

export function capacityMarkdown(r: CapacityResults & { check?: StorageCheck }): string {
  return [
    `## Capacity ${r.date}`,
    '',
    runLine(r),
    '',
    '### Cost per request',
    '',
    figuresTable(r),
    '',
    '### Bytes per row at this size',
    '',
    bytesTable(r),
    '',
    '### Prediction against measurement',
    '',
    checkTable(r.check),
    '',
    '### Replica lag',
    '',
    replicaLagText(r),
    '',
    '### The model on the example partner mixes',
    '',
    examplesTable(r.figures),
    '',
    '### One primary’s write limit',
    '',
    writeLimitText(r.figures),
    '',
    '### 1 B events',
    '',
    projectionTable(r),
    '',
  ].join('\n');
}
