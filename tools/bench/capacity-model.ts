/**
 * The capacity model (docs/capacity.md): from figures measured by `npm run bench -- --capacity`
 * (CPU time and WAL per request, bytes per row) and a partner mix, the cores, primary size,
 * storage growth and replica advice, and the write rate at which one primary is the limit.
 * Pure arithmetic, no I/O: every formula here is the one docs/capacity.md shows.
 */

/** What one unit of a workload costs: CPU milliseconds of each process kind, WAL bytes. */
export interface WorkloadCost {
  apiMs: number;
  workerMs: number;
  databaseMs: number;
  walBytes: number;
}

export interface TableBytes {
  table: string;
  rows: number;
  tableBytes: number;
  indexBytes: number;
  /** Leaf partitions (1 for a plain table). */
  partitions: number;
}

/** The measured inputs of the model. */
export interface MeasuredFigures {
  get: WorkloadCost;
  /** A GET /v1/events page of 500 events. */
  page: WorkloadCost;
  /** A GET /v1/events poll that finds nothing new. */
  poll: WorkloadCost;
  create: WorkloadCost;
  /** One event written by the laboratory's operations (results, status changes). */
  eventWrite: WorkloadCost;
  /** One webhook delivery, end to end. */
  delivery: WorkloadCost;
  /** Table + indexes + TOAST per row: an order with its specimens, results and exceptions; an event; a delivery; an attempt. */
  bytesPerOrder: number;
  bytesPerEvent: number;
  bytesPerDelivery: number;
  bytesPerAttempt: number;
  /** Events per order in the measured history (the template orders' scenarios). */
  eventsPerOrder: number;
}

export interface PartnerMix {
  name: string;
  ordersPerDay: number;
  /** API clients (partners) the orders are spread over. */
  clients: number;
  /** Of them, the ones that follow GET /v1/events by polling, each every `pollIntervalSeconds`. */
  pollingClients: number;
  pollIntervalSeconds: number;
  /** Webhook endpoints per client: each event of a client is delivered to each. */
  webhookEndpointsPerClient: number;
  /** GET /v1/orders/{id} per order over its life. */
  readsPerOrder: number;
  /** Busiest hour's order rate ÷ the day's average. */
  peakFactor: number;
  /** Defaults to the measured history's. */
  eventsPerOrder?: number;
}

export interface ModelSettings {
  /** Share of a core a process is planned to use at peak. */
  utilisation: number;
  /** Attempts per delivery (a share of receivers answer 5xx once). */
  attemptsPerDelivery: number;
  /** PARTNER_WEBHOOK_RETENTION_DAYS: deliveries and attempts are kept this long, then pruned. */
  webhookRetentionDays: number;
  /** The largest primary one would run (vCPU). */
  maxPrimaryVcpu: number;
  /** WAL a second one primary and its replicas are planned to sustain (single-threaded replay on the replica is the bound). */
  walLimitBytesPerSecond: number;
  /** RAM per vCPU of a general-purpose database machine. */
  ramGbPerVcpu: number;
}

export const DEFAULT_SETTINGS: ModelSettings = {
  utilisation: 0.6,
  attemptsPerDelivery: 1.1,
  webhookRetentionDays: 30,
  maxPrimaryVcpu: 64,
  walLimitBytesPerSecond: 64 * 1024 * 1024,
  ramGbPerVcpu: 4,
};

export const PAGE_EVENTS = 500;
const DAY = 86_400;
export const DAYS_PER_MONTH = 30.44;

type Side = 'apiMs' | 'workerMs' | 'databaseMs' | 'walBytes';

export interface Sizing {
  mix: PartnerMix;
  /** Rates at the busiest hour (polls do not follow the order rate). */
  rates: { createsPerSecond: number; eventWritesPerSecond: number; deliveriesPerSecond: number; getsPerSecond: number; pollsPerSecond: number; eventsReadPerSecond: number };
  /**
   * Cores of CPU needed at peak (at the planned utilisation), before rounding. `api`: the partners'
   * requests; `laboratory`: the process applying the laboratory's operations (measured through the
   * sandbox simulator, which runs them inside the API: an upper bound for a laboratory integration).
   */
  cores: { api: number; laboratory: number; worker: number; databaseWrites: number; databaseReads: number; database: number };
  /** What to run: API and worker processes of one core each (two at least, for availability), the primary's vCPU and RAM. */
  plan: { apiProcesses: number; workerProcesses: number; primaryVcpu: number; primaryRamGb: number };
  wal: { peakBytesPerSecond: number; bytesPerDay: number };
  storage: {
    /** Orders and events are kept: the history grows by this much a month. */
    historyBytesPerMonth: number;
    /** Deliveries and attempts are kept `webhookRetentionDays`: their tables stop growing at this size. */
    deliveryBytesRetained: number;
    /** One day of history and of deliveries: what partners page and read back, and the worker works on. */
    hotBytes: number;
  };
  replica: { advised: boolean; reason: string };
}

/** Events of the mix per order. */
const eventsOf = (mix: PartnerMix, f: MeasuredFigures) => mix.eventsPerOrder ?? f.eventsPerOrder;

/** Cost of reading one more event in a page: a full page's cost less an empty poll's, per event. */
export function perEventRead(f: MeasuredFigures): WorkloadCost {
  const side = (s: Side) => Math.max(0, f.page[s] - f.poll[s]) / PAGE_EVENTS;
  return { apiMs: side('apiMs'), workerMs: side('workerMs'), databaseMs: side('databaseMs'), walBytes: side('walBytes') };
}

/** Per order written (creation, its later events, their deliveries): what one order costs the writers. */
export function perOrderWrite(f: MeasuredFigures, eventsPerOrder: number, endpoints: number): WorkloadCost {
  const side = (s: Side) => f.create[s] + (eventsPerOrder - 1) * f.eventWrite[s] + eventsPerOrder * endpoints * f.delivery[s];
  return { apiMs: side('apiMs'), workerMs: side('workerMs'), databaseMs: side('databaseMs'), walBytes: side('walBytes') };
}

export function size(f: MeasuredFigures, mix: PartnerMix, settings: ModelSettings = DEFAULT_SETTINGS): Sizing {
  const e = eventsOf(mix, f);
  const creates = (mix.ordersPerDay / DAY) * mix.peakFactor;
  const eventWrites = creates * (e - 1);
  const deliveries = creates * e * mix.webhookEndpointsPerClient;
  const gets = creates * mix.readsPerOrder;
  const polls = mix.pollIntervalSeconds > 0 ? mix.pollingClients / mix.pollIntervalSeconds : 0;
  const eventsRead = mix.clients > 0 ? creates * e * Math.min(1, mix.pollingClients / mix.clients) : 0;
  const read = perEventRead(f);
  // Load of one side in ms a second: Σ rate × cost.
  const writes = (s: Side) => creates * f.create[s] + eventWrites * f.eventWrite[s] + deliveries * f.delivery[s];
  const reads = (s: Side) => gets * f.get[s] + polls * f.poll[s] + eventsRead * read[s];
  const cores = (ms: number) => ms / 1000 / settings.utilisation;
  const databaseWrites = cores(writes('databaseMs'));
  const databaseReads = cores(reads('databaseMs'));
  const database = databaseWrites + databaseReads;
  const api = cores(creates * f.create.apiMs + deliveries * f.delivery.apiMs + reads('apiMs'));
  const laboratory = cores(eventWrites * f.eventWrite.apiMs);
  const worker = cores(writes('workerMs'));

  const historyBytesPerMonth = mix.ordersPerDay * DAYS_PER_MONTH * (f.bytesPerOrder + e * f.bytesPerEvent);
  const deliveryBytesRetained = mix.ordersPerDay * e * mix.webhookEndpointsPerClient * settings.webhookRetentionDays * (f.bytesPerDelivery + settings.attemptsPerDelivery * f.bytesPerAttempt);
  const hotBytes = (historyBytesPerMonth / DAYS_PER_MONTH) + deliveryBytesRetained / settings.webhookRetentionDays;
  const primaryVcpu = powerOfTwoAtLeast(Math.max(2, Math.ceil(database)));
  // RAM: the machine's usual share per vCPU, or enough that a day's data fits in half of it (the rest: connections, work_mem, the OS).
  const primaryRamGb = Math.max(primaryVcpu * settings.ramGbPerVcpu, powerOfTwoAtLeast(Math.ceil((2 * hotBytes) / 1024 ** 3)));

  const readShare = database > 0 ? databaseReads / database : 0;
  const replica =
    databaseReads >= 1 && readShare >= 0.5
      ? { advised: true, reason: `reads are ${Math.round(readShare * 100)} % of the primary's CPU (${databaseReads.toFixed(1)} cores): a replica of the same size takes them` }
      : primaryVcpu > settings.maxPrimaryVcpu / 2 && databaseReads >= 1
        ? { advised: true, reason: `the primary needs ${primaryVcpu} vCPU; moving the reads (${databaseReads.toFixed(1)} cores) to a replica keeps it under ${settings.maxPrimaryVcpu / 2}` }
        : { advised: false, reason: `reads need ${databaseReads.toFixed(2)} cores (${Math.round(readShare * 100)} % of the primary's CPU): the primary serves them (a standby for failover is another matter)` };

  return {
    mix,
    rates: { createsPerSecond: creates, eventWritesPerSecond: eventWrites, deliveriesPerSecond: deliveries, getsPerSecond: gets, pollsPerSecond: polls, eventsReadPerSecond: eventsRead },
    cores: { api, laboratory, worker, databaseWrites, databaseReads, database },
    plan: { apiProcesses: Math.max(2, Math.ceil(api)), workerProcesses: Math.max(2, Math.ceil(worker)), primaryVcpu, primaryRamGb },
    wal: { peakBytesPerSecond: writes('walBytes'), bytesPerDay: perOrderWrite(f, e, mix.webhookEndpointsPerClient).walBytes * mix.ordersPerDay },
    storage: { historyBytesPerMonth, deliveryBytesRetained, hotBytes },
    replica,
  };
}

export interface WriteLimit {
  /** DB CPU and WAL of one order written (its creation, later events, their deliveries). */
  perOrder: WorkloadCost;
  /** Orders a second the largest primary's CPU takes at the planned utilisation. */
  ordersPerSecondByCpu: number;
  /** Orders a second whose WAL reaches the planned WAL limit. */
  ordersPerSecondByWal: number;
  ordersPerSecond: number;
  bound: 'cpu' | 'wal';
  /** The same at the busiest hour of a day shaped by `peakFactor`: orders a day. */
  ordersPerDay: number;
  eventsPerSecond: number;
}

/** The write rate at which one primary is the limit: the largest primary's CPU or the WAL stream, whichever comes first. */
export function singlePrimaryLimit(f: MeasuredFigures, mix: Pick<PartnerMix, 'webhookEndpointsPerClient' | 'peakFactor' | 'eventsPerOrder'>, settings: ModelSettings = DEFAULT_SETTINGS): WriteLimit {
  const e = mix.eventsPerOrder ?? f.eventsPerOrder;
  const perOrder = perOrderWrite(f, e, mix.webhookEndpointsPerClient);
  const byCpu = perOrder.databaseMs > 0 ? (settings.maxPrimaryVcpu * settings.utilisation * 1000) / perOrder.databaseMs : Infinity;
  const byWal = perOrder.walBytes > 0 ? settings.walLimitBytesPerSecond / perOrder.walBytes : Infinity;
  const ordersPerSecond = Math.min(byCpu, byWal);
  return {
    perOrder,
    ordersPerSecondByCpu: byCpu,
    ordersPerSecondByWal: byWal,
    ordersPerSecond,
    bound: byCpu <= byWal ? 'cpu' : 'wal',
    ordersPerDay: (ordersPerSecond * DAY) / mix.peakFactor,
    eventsPerSecond: ordersPerSecond * e,
  };
}

/** Storage of a history of `events` events (orders = events ÷ events per order), with the delivery tables at `deliveries` rows. */
export function predictBytes(f: MeasuredFigures, counts: { orders: number; events: number; deliveries: number; attempts: number }): { orders: number; events: number; deliveries: number; attempts: number; total: number } {
  const orders = counts.orders * f.bytesPerOrder;
  const events = counts.events * f.bytesPerEvent;
  const deliveries = counts.deliveries * f.bytesPerDelivery;
  const attempts = counts.attempts * f.bytesPerAttempt;
  return { orders, events, deliveries, attempts, total: orders + events + deliveries + attempts };
}

export interface Projection {
  events: number;
  orders: number;
  /** Events and orders tables with their indexes. */
  historyBytes: number;
  eventIndexBytes: number;
  /** Months, and so monthly partitions of `events`, until the history holds `events` at the mix's rate. */
  months: number;
}

/** The history at `events` events for a mix: bytes, the events' index bytes (from the measured share), and how many monthly partitions it spans. */
export function project(f: MeasuredFigures, mix: PartnerMix, events: number, eventIndexShare: number): Projection {
  const e = eventsOf(mix, f);
  const orders = events / e;
  const historyBytes = orders * f.bytesPerOrder + events * f.bytesPerEvent;
  const months = events / (mix.ordersPerDay * e * DAYS_PER_MONTH);
  return { events, orders, historyBytes, eventIndexBytes: events * f.bytesPerEvent * eventIndexShare, months };
}

function powerOfTwoAtLeast(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
