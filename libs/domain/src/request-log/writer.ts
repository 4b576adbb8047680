import type { Sql } from '@lop/db';
import { NO_BODIES, type RequestLogBodies } from './allow-list';
import { toRequestLogRow, type FinishedRequest, type RequestLogRow } from './record';

export interface RequestLogWriterOptions {
  /**
   * What of each route's bodies is kept: the allow-list's table (requestLogBodies(), from
   * routers/request-log-bodies.ts). Without it no body value is kept, only types and sizes.
   */
  bodies?: RequestLogBodies;
  /** Rows per INSERT; a full batch is written at once, without waiting for the interval. */
  batchSize?: number;
  /** The longest a recorded request waits in memory before it is written. */
  flushIntervalMs?: number;
  /** Requests held in memory at most; past it new ones are dropped and counted, never waited for. */
  maxBuffered?: number;
  /** Bytes of bodies held in memory at most (a flood of large bodies meets this before the row count). */
  maxBufferedBytes?: number;
  /**
   * Requests of one API client logged per second, per API process; past it they are not logged
   * (counted). A person integrating makes a few a second; a load test makes thousands, and logging
   * each would cost the API and the database a share of every request.
   */
  maxPerClientPerSecond?: number;
  /** Told of requests dropped because the buffer was full (once per flush, with the count since the last one). */
  onDropped?: (rows: number) => void;
  /** Told of a batch that could not be written; its rows are dropped (the log is a convenience, not a record). */
  onFailed?: (error: unknown, rows: number) => void;
}

/**
 * The sandbox request log's only writer: requests are recorded after their response has finished,
 * into memory, and written in batches with one multi-row INSERT, off every request's path. The
 * redaction and parsing of bodies happen here too, at flush time. Nothing a request does waits on
 * the log: a full buffer drops, a failed INSERT drops its batch, both are counted and reported.
 */
export class RequestLogWriter {
  private buffer: FinishedRequest[] = [];
  private bufferedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;
  private droppedSinceFlush = 0;
  private second = 0;
  private readonly thisSecond = new Map<string, number>();
  readonly batchSize: number;
  readonly flushIntervalMs: number;
  readonly maxBuffered: number;
  readonly maxBufferedBytes: number;
  readonly maxPerClientPerSecond: number;
  /** Totals since start, for metrics and tests. */
  readonly counts = { recorded: 0, written: 0, dropped: 0, failed: 0, limited: 0 };

  constructor(
    private readonly sql: Sql,
    private readonly options: RequestLogWriterOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 200;
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.maxBuffered = options.maxBuffered ?? 5000;
    this.maxBufferedBytes = options.maxBufferedBytes ?? 64 * 1024 * 1024;
    this.maxPerClientPerSecond = options.maxPerClientPerSecond ?? 100;
  }

  /**
   * Whether a request of this API client is to be logged, asked before anything is captured for it:
   * false once the client has had its share of this second (counted as `limited`), or after close.
   */
  admit(clientId: string, now = Date.now()): boolean {
    if (this.closed) return false;
    const second = Math.floor(now / 1000);
    if (second !== this.second) {
      this.second = second;
      this.thisSecond.clear();
    }
    const used = this.thisSecond.get(clientId) ?? 0;
    if (used >= this.maxPerClientPerSecond) {
      this.counts.limited++;
      return false;
    }
    this.thisSecond.set(clientId, used + 1);
    return true;
  }

  /** Keeps a finished request for the next batch; returns at once, whatever the database is doing. */
  record(request: FinishedRequest): void {
    const bytes = sizeOf(request);
    if (this.closed || this.buffer.length >= this.maxBuffered || this.bufferedBytes + bytes > this.maxBufferedBytes) {
      this.counts.dropped++;
      this.droppedSinceFlush++;
      return;
    }
    this.counts.recorded++;
    this.bufferedBytes += bytes;
    this.buffer.push(request);
    if (this.buffer.length >= this.batchSize) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushIntervalMs).unref();
  }

  /** Writes everything buffered so far; batches are written one after another, never concurrently. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.writing = this.writing.then(() => this.writeBuffered());
    return this.writing;
  }

  /** Stops taking requests and writes what is buffered (graceful shutdown, before the pool closes). */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private async writeBuffered(): Promise<void> {
    if (this.droppedSinceFlush > 0) {
      this.options.onDropped?.(this.droppedSinceFlush);
      this.droppedSinceFlush = 0;
    }
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, this.batchSize);
      for (const request of batch) this.bufferedBytes -= sizeOf(request);
      try {
        await insertRows(this.sql, await prepareRows(batch, this.options.bodies ?? NO_BODIES));
        this.counts.written += batch.length;
      } catch (error) {
        this.counts.failed += batch.length;
        this.options.onFailed?.(error, batch.length);
      }
    }
  }
}

/**
 * Rows are parsed, redacted and serialised a few at a time, letting requests run in between: a
 * batch of a hundred in one go held the event loop for milliseconds once a second, which is what
 * a GET's p99 measures.
 */
const PREPARE_CHUNK = 10;

async function prepareRows(batch: FinishedRequest[], bodies: RequestLogBodies): Promise<string[]> {
  const rows: string[] = [];
  for (let i = 0; i < batch.length; i += PREPARE_CHUNK) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const request of batch.slice(i, i + PREPARE_CHUNK)) rows.push(JSON.stringify(columnsOf(toRequestLogRow(request, bodies))));
  }
  return rows;
}

/** What a buffered request holds in memory, roughly: its bodies as sent, and a little for the rest. */
const sizeOf = (request: FinishedRequest) => request.requestBytes + request.responseText.length + 512;

const columnsOf = (r: RequestLogRow) => ({
  laboratory_id: r.laboratoryId,
  client_id: r.clientId,
  environment: r.environment,
  request_id: r.requestId,
  occurred_at: r.occurredAt,
  method: r.method,
  route: r.route,
  status: r.status,
  error_code: r.errorCode,
  duration_ms: r.durationMs,
  key_prefix: r.keyPrefix,
  // The column is named for the two doors it held first (0011); it is text, so a source needs no migration.
  door: r.source,
  scope: r.scope,
  request_body: r.requestBody,
  response_body: r.responseBody,
});

/**
 * One INSERT for the batch, its rows as one JSON parameter that PostgreSQL unpacks: about a sixth
 * of the API process's CPU per row that building a 15-column multi-row VALUES statement took
 * (measured: 15 µs a row against 92 µs, 200-row batches), and this CPU is shared with requests.
 * `rows`: each row's columns as JSON text (prepareRows).
 */
async function insertRows(sql: Sql, rows: string[]): Promise<void> {
  const json = `[${rows.join(',')}]`;
  await sql`
    insert into sandbox_request_log (laboratory_id, client_id, environment, request_id, occurred_at, method, route, status, error_code, duration_ms, key_prefix, door, scope, request_body, response_body)
    select laboratory_id, client_id, environment, request_id, occurred_at, method, route, status, error_code, duration_ms, key_prefix, door, scope, request_body, response_body
    from json_populate_recordset(null::sandbox_request_log, ${json}::json)`;
}
