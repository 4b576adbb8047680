import type { IncomingMessage, ServerResponse } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Registry, register as processRegistry } from 'prom-client';
import { partitionHorizon, type Sql } from '@lop/db';
import type { ReadAuditWriter } from '../audit/read-audit';
import { eventPartitions, horizonSeconds } from '../events/partitions';
import type { EventWaiters } from '../events/waiters';
import { READ_ROUTES, type ReplicaSet } from '../reads/replica-set';
import type { RequestLogWriter } from '../request-log/writer';
import { readDeliveryBacklog, type DeliveryBacklog } from '../webhooks/delivery-store';

/**
 * Prometheus metrics shared by the processes (DESIGN §12): the webhook delivery counter, the
 * delivery backlog read at scrape time (through the deliveries' owner, webhooks/delivery-store.ts), and the /metrics handler. The HTTP server
 * that serves them listens on an internal port owned by each app, never the partner port.
 */

/** Outcomes of one delivery job: the verdicts of process-delivery.ts, or `released` when the attempt could not finish. */
export type DeliveryAttemptOutcome = 'delivered' | 'retry' | 'dead_lettered' | 'cancelled' | 'held' | 'not_due' | 'released';

/** Per process, in prom-client's default registry: a worker running inside another process (npm start) shows up there too. */
export const deliveryAttempts = new Counter({
  name: 'partner_webhook_delivery_attempts_total',
  help: 'Webhook delivery jobs run by this process, by outcome (released = the attempt could not finish and pg-boss runs it again).',
  labelNames: ['outcome'] as const,
  registers: [processRegistry],
});

export function countDeliveryAttempt(outcome: DeliveryAttemptOutcome): void {
  deliveryAttempts.inc({ outcome });
}

/** Rows removed by the retention job (libs/domain/src/retention), per table: one series per table it prunes. */
export const retentionPrunedRows = new Counter({
  name: 'partner_retention_pruned_rows_total',
  help: 'Rows removed by the scheduled retention pass in this process, by table.',
  labelNames: ['table'] as const,
  registers: [processRegistry],
});

/** When this process last finished a retention pass: an alert can tell a schedule that stopped running. */
export const retentionLastRun = new Gauge({
  name: 'partner_retention_last_run_timestamp_seconds',
  help: 'Unix time at which this process last finished a retention pass.',
  registers: [processRegistry],
});

export function countPrunedRows(table: string, rows: number): void {
  // inc(0) still creates the series, so every pruned table shows up after the first pass.
  retentionPrunedRows.inc({ table }, rows);
}

export function markRetentionRun(): void {
  retentionLastRun.setToCurrentTime();
}

/**
 * Queue depth and outbox lag as gauges, read when scraped. A scrape while the database is
 * unreachable leaves them out (and counts the failure) instead of failing the whole scrape.
 */
export function registerBacklogGauges(registry: Registry, sql: Sql): void {
  const failures = new Counter({ name: 'partner_metrics_database_read_failures_total', help: 'Scrapes whose database-backed gauges could not be read.', registers: [registry] });
  let reading: Promise<DeliveryBacklog | null> | null = null;
  // One query per scrape, shared by the gauges below.
  const backlog = () =>
    (reading ??= readDeliveryBacklog(sql)
      .catch(() => {
        failures.inc();
        return null;
      })
      .finally(() => setImmediate(() => (reading = null))));
  new Gauge({
    name: 'partner_webhook_queue_depth',
    help: 'Pending webhook deliveries, by whether their next attempt is due now or scheduled for a retry later.',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const b = await backlog();
      this.reset();
      if (!b) return;
      this.set({ state: 'due' }, b.due);
      this.set({ state: 'scheduled' }, b.scheduled);
    },
  });
  new Gauge({
    name: 'partner_webhook_outbox_lag_seconds',
    help: 'How long the oldest due webhook delivery has waited since it became due (0 when none is waiting): committed events not yet delivered.',
    registers: [registry],
    async collect() {
      const b = await backlog();
      this.reset();
      if (b) this.set(b.oldestDueSeconds);
    },
  });
}

/**
 * How far ahead events' partitions reach, read when scraped: an insert past the last partition
 * fails, and with it every order create (events/partitions.ts). The maintenance pass keeps it at
 * three to four months; alert well before it reaches zero (docs/operations.md § Partitioned history).
 * Absent on the schema before events was partitioned, or when the database cannot be read.
 */
export function registerEventPartitionGauge(registry: Registry, sql: Sql): void {
  new Gauge({
    name: 'partner_events_partition_horizon_seconds',
    help: 'Seconds until the newest partition of events ends: events created after that cannot be inserted (order creates fail). Kept at 3-4 months by the maintenance pass.',
    registers: [registry],
    async collect() {
      this.reset();
      const partitions = await eventPartitions(sql).catch(() => undefined);
      const seconds = partitions && horizonSeconds(partitionHorizon(partitions));
      if (seconds !== undefined && Number.isFinite(seconds)) this.set(seconds);
    },
  });
}

/** The sandbox request log's writer, read when scraped: rows written, and rows lost to a full buffer or a failed batch. */
export function registerRequestLogMetrics(registry: Registry, writer: RequestLogWriter): void {
  new Gauge({
    name: 'partner_request_log_rows',
    help: 'Sandbox request log rows since start, by outcome: written, limited (over the per-client rate), dropped (buffer full) or failed (batch not written).',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.set({ outcome: 'written' }, writer.counts.written);
      this.set({ outcome: 'limited' }, writer.counts.limited);
      this.set({ outcome: 'dropped' }, writer.counts.dropped);
      this.set({ outcome: 'failed' }, writer.counts.failed);
    },
  });
}

/**
 * The audit records of reads (docs/audit.md): `failed` is reads answered 503 because their record
 * could not be written; `before_schema` reads answered on a schema without the trail (before 0029).
 */
export function registerAuditMetrics(registry: Registry, writer: ReadAuditWriter): void {
  new Gauge({
    name: 'partner_audit_read_records',
    help: 'Audit records of partner reads since start, by outcome: written, failed (the read was answered 503) or before_schema (answered unrecorded: no audit table yet).',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.set({ outcome: 'written' }, writer.counts.written);
      this.set({ outcome: 'failed' }, writer.counts.failed);
      this.set({ outcome: 'before_schema' }, writer.counts.beforeSchema);
    },
  });
}

/**
 * The read replicas as the process's monitor last saw them, and where replica-safe reads were
 * answered (reads/read-routing.ts ReadRoute): a rising `primary_after_replica_error` or a replica
 * `up` at 0 is the alert; `primary_behind_client` is read-your-writes at work.
 */
export function registerReplicaMetrics(registry: Registry, replicas: ReplicaSet): void {
  new Gauge({
    name: 'partner_db_replica_up',
    help: 'Whether a read replica takes reads: 1 answering and within DATABASE_READ_MAX_LAG_*, 0 lagging beyond them or down.',
    labelNames: ['replica', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const replica of replicas.states()) this.set({ replica: replica.name, state: replica.state }, replica.state === 'up' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'partner_db_replica_lag_bytes',
    help: 'WAL bytes a read replica has still to replay, at its last check.',
    labelNames: ['replica'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const replica of replicas.states()) if (replica.lagBytes !== undefined) this.set({ replica: replica.name }, replica.lagBytes);
    },
  });
  new Gauge({
    name: 'partner_db_replica_lag_seconds',
    help: 'Age of the newest transaction a read replica has replayed (0 when caught up), at its last check.',
    labelNames: ['replica'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const replica of replicas.states()) if (replica.lagSeconds !== undefined) this.set({ replica: replica.name }, replica.lagSeconds);
    },
  });
  new Counter({
    name: 'partner_db_reads_total',
    help: 'Replica-safe reads by where they were answered: replica, or primary and why.',
    labelNames: ['route'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const counts = replicas.readCounts();
      for (const route of READ_ROUTES) this.inc({ route }, counts.get(route) ?? 0);
    },
  });
}

/** The process's own metrics (CPU, resident memory, heap, event loop lag, GC), collected once per process. */
export function collectProcessMetrics(): void {
  if (!processRegistry.getSingleMetric('process_resident_memory_bytes')) collectDefaultMetrics({ register: processRegistry });
}

/** GET /metrics in the Prometheus text format; `registries` are merged at each scrape. */
export function metricsHandler(registries: () => Registry[]) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    collectProcessMetrics();
    const merged = Registry.merge([...registries(), processRegistry]);
    merged.metrics().then(
      (text) => res.writeHead(200, { 'content-type': merged.contentType }).end(text),
      (error: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics unavailable: ${(error as Error).message}\n`),
    );
  };
}

/** GET /v1/events?wait in this API process: reads waiting now, and reads refused 429 since start by the cap they met (docs/events.md). */
export function registerEventWaitMetrics(registry: Registry, waiters: EventWaiters): void {
  new Gauge({
    name: 'partner_events_waiting_reads',
    help: 'Reads of GET /v1/events held by wait in this process now (no database connection each).',
    registers: [registry],
    collect() {
      this.set(waiters.size);
    },
  });
  new Gauge({
    name: 'partner_events_waiting_reads_refused',
    help: 'Reads of GET /v1/events?wait refused 429 too_many_waiting_reads since start, by cap: stream_full (the client and environment) or process_full.',
    labelNames: ['cap'] as const,
    registers: [registry],
    collect() {
      this.set({ cap: 'stream_full' }, waiters.refusals.stream_full);
      this.set({ cap: 'process_full' }, waiters.refusals.process_full);
    },
  });
}
