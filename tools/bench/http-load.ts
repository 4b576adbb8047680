import autocannon from 'autocannon';
import { cpuTimeOf } from './processes';

/** What one load run measured. Latencies in milliseconds. */
export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
  /** Responses whose status was not the expected one, and transport errors/timeouts. */
  failures: number;
  statusCodes: Record<string, number>;
  /** CPU time the server process spent per answered request (less sensitive to machine load than throughput). */
  cpuMsPerRequest: number | null;
}

export interface LoadOptions {
  url: string;
  title: string;
  seconds: number;
  connections: number;
  /** Requests per second over all connections; omitted = as fast as the server answers (peak). */
  rate?: number;
  /** Builds each request: path, method, headers, body. */
  request: () => { path: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string };
  expectStatus: number;
  /** The server's process id, to measure its CPU time per request. */
  pid?: number;
}

/** One autocannon run, with its progress bar on an interactive terminal. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const instance = autocannon({
    url: options.url,
    title: options.title,
    connections: options.connections,
    duration: options.seconds,
    timeout: 10,
    ...(options.rate ? { overallRate: options.rate } : {}),
    requests: [
      {
        setupRequest: (request) => {
          const next = options.request();
          return { ...request, method: next.method ?? 'GET', path: next.path, headers: { ...request.headers, ...next.headers }, body: next.body };
        },
      },
    ],
  });
  const interactive = Boolean(process.stderr.isTTY);
  // Without a callback autocannon returns its instance, which is also a promise of the result.
  autocannon.track(instance as unknown as autocannon.Instance, { outputStream: process.stderr, renderProgressBar: interactive, renderResultsTable: false, renderLatencyTable: false });
  if (!interactive) process.stderr.write(`  ${options.title}: ${options.seconds} s, ${options.connections} connections${options.rate ? `, ${options.rate} req/s` : ''}\n`);
  const cpuBefore = options.pid ? cpuTimeOf(options.pid) : null;
  const result = await instance;
  const cpuAfter = options.pid ? cpuTimeOf(options.pid) : null;
  const statusCodes: Record<string, number> = {};
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = (stats as { count: number }).count;
  const expected = statusCodes[String(options.expectStatus)] ?? 0;
  const total = Object.values(statusCodes).reduce((a, b) => a + b, 0);
  return {
    requestsPerSecond: expected / (result.duration || options.seconds),
    p50: result.latency.p50,
    p99: result.latency.p99,
    total,
    failures: total - expected + result.errors + result.timeouts,
    statusCodes,
    cpuMsPerRequest: cpuBefore !== null && cpuAfter !== null && total > 0 ? Number(((cpuAfter - cpuBefore) / total).toFixed(3)) : null,
  };
}

/** Follows the event stream from the start, page by page (limit 500), until `count` events are read. Events per second. */
export async function pageEvents(base: string, key: string, count: number): Promise<{ eventsPerSecond: number; events: number; pages: number; seconds: number }> {
  const { eventsPerSecond, events, pages, seconds } = await readStream(base, key, { afterSequence: 0, maxEvents: count });
  return { eventsPerSecond, events, pages, seconds };
}

export interface StreamRead {
  eventsPerSecond: number;
  events: number;
  pages: number;
  seconds: number;
  /** Per page (one GET /v1/events), in milliseconds. */
  pageP50: number;
  pageP99: number;
}

/**
 * Reads the stream after `afterSequence` (0 = the oldest cursor) page by page (limit 500) until
 * `maxEvents` are read or the stream ends, checking that sequences are dense. The cursor is the
 * one the API itself hands out for that position: `cursorAt` mints it with the service's key
 * (cursors are bound to their stream), needed only when `afterSequence` is above 0.
 */
export async function readStream(
  base: string,
  key: string,
  options: { afterSequence: number; maxEvents: number; minPages?: number; cursorAt?: (sequence: number) => string },
): Promise<StreamRead> {
  const start = () => {
    if (options.afterSequence === 0) return undefined;
    if (!options.cursorAt) throw new Error('readStream: a start after sequence 0 needs cursorAt');
    return options.cursorAt(options.afterSequence);
  };
  let cursor: string | undefined = start();
  let events = 0;
  let lastSequence = options.afterSequence;
  const pageTimes: number[] = [];
  const started = performance.now();
  // A short stream is read again from the same position until `minPages` pages are timed: a
  // percentile of a handful of pages would be its slowest page.
  const minPages = options.minPages ?? 0;
  while (events < options.maxEvents || pageTimes.length < minPages) {
    const pageStarted = performance.now();
    const response = await fetch(`${base}/v1/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`, { headers: { authorization: `Bearer ${key}` } });
    if (response.status !== 200) throw new Error(`GET /v1/events answered ${response.status}: ${await response.text()}`);
    const body = (await response.json()) as { data: { events: { sequence: number }[]; next_cursor: string; has_more: boolean } };
    pageTimes.push(performance.now() - pageStarted);
    for (const event of body.data.events) {
      if (event.sequence !== lastSequence + 1) throw new Error(`event stream gap: ${lastSequence} then ${event.sequence}`);
      lastSequence = event.sequence;
    }
    events += body.data.events.length;
    cursor = body.data.next_cursor;
    if (!body.data.has_more) {
      if (pageTimes.length >= minPages) break;
      cursor = start();
      lastSequence = options.afterSequence;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  pageTimes.sort((a, b) => a - b);
  const at = (p: number) => Number((pageTimes[Math.min(pageTimes.length - 1, Math.floor(p * pageTimes.length))] ?? 0).toFixed(1));
  return { eventsPerSecond: events / seconds, events, pages: pageTimes.length, seconds, pageP50: at(0.5), pageP99: at(0.99) };
}
