import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { eq } from 'drizzle-orm';
import express from 'express';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, webhookDeliveries } from '@lop/db';
import { loadConfig, startTelemetry, type Telemetry } from '@lop/domain';
import { createLogger, startPartnerApi, type RunningApi } from '@lop/partner-api';
import { startDeliveryWorker, type RunningDeliveryWorker } from '@lop/delivery-worker';
import { freePort } from '@lop/db';
import { eventually, newPartner, type Partner, type Receiver, startReceiver, subscribe, TEST_ENCRYPTION_KEY, testDatabaseUrl, workerConfig } from '@lop/testing';

/**
 * Traces (OpenTelemetry): off by default, and then nothing is registered at all; on, a create
 * request is one trace from the API's HTTP server span through the create transaction to —
 * through the outbox's stored trace context — the delivery worker's attempt. The API and the
 * worker run in this process exactly as in production, telemetry started after their modules
 * were imported (as main() does), with an in-memory exporter in place of OTLP.
 */

// This file decides when telemetry is on; an OTEL_* variable in the developer's shell must not.
for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];

const database = connectDatabase(testDatabaseUrl(), { max: 2, applicationName: 'traces-e2e' });
let receiver: Receiver;

interface Service {
  api: RunningApi;
  worker: RunningDeliveryWorker;
  logLines(): Record<string, any>[];
  close(): Promise<void>;
}

/** The partner API (its logger writing to memory) and a delivery worker, both in this process. */
async function startService(): Promise<Service> {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      raw.push(String(chunk));
      done();
    },
  });
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    PARTNER_DB_POOL_SIZE: '4',
    PARTNER_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
  });
  const api = await startPartnerApi({ config, databaseUrl: testDatabaseUrl(), logger: createLogger(config, 'traces-e2e', stream) });
  const worker = await startDeliveryWorker(testDatabaseUrl(), { config: workerConfig() });
  return {
    api,
    worker,
    logLines: () => raw.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line)),
    close: async () => {
      await api.close();
      await worker.close();
    },
  };
}

const PATIENT_NAME = `Zelda${randomBytes(3).toString('hex')}`;

/** POST /v1/orders as a partner sends it, personal data included; a subscription to the receiver first. */
async function createOrderWithSubscriber(service: Service, partner: Partner, path: string) {
  await subscribe(database.db, partner, receiver.url(path));
  const response = await fetch(`${service.api.url}${PARTNER_BASE_PATH}/v1/orders`, {
    method: 'POST',
    headers: { authorization: `Bearer ${partner.key}`, 'content-type': 'application/json', 'idempotency-key': randomBytes(8).toString('hex') },
    body: JSON.stringify({
      external_order_id: `trace-${randomBytes(4).toString('hex')}`,
      program_id: partner.programId,
      item_id: partner.itemId,
      external_subject_id: partner.subject,
      collection: 'in_person_draw',
      patient: { legal_first_name: PATIENT_NAME, legal_last_name: 'Private', date_of_birth: '1980-02-03' },
    }),
  });
  const body = (await response.json()) as any;
  expect(response.status, JSON.stringify(body)).toBe(201);
  const [delivered] = await receiver.waitFor((requests) => requests.some((r) => r.path.startsWith(path)), 15_000, 'the order.created delivery');
  const request = receiver.requests.find((r) => r.path.startsWith(path)) ?? delivered;
  const [delivery] = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.eventId, String(request.headers['x-partner-event-id'])));
  return { orderId: body.data.order_id as string, requestId: response.headers.get('x-request-id')!, delivered: request, delivery };
}

/** shimmer marks what it wrapped: how to see whether an instrumentation patched a module. */
const isPatched = (fn: unknown) => Boolean((fn as { __wrapped?: boolean }).__wrapped);

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await database.close();
});

describe('traces off (the default)', () => {
  it('registers nothing: no tracer, no patched module, no trace context in the outbox, no trace ids in log lines', async () => {
    expect(await startTelemetry({ serviceName: 'traces-e2e' })).toBeUndefined();
    const probe = trace.getTracer('probe').startSpan('probe');
    expect(probe.isRecording()).toBe(false);
    probe.end();
    expect(isPatched(http.Server.prototype.emit)).toBe(false);
    expect(isPatched(express.application.use)).toBe(false);
    expect(isPatched(pg.Client.prototype.query)).toBe(false);

    const service = await startService();
    try {
      const partner = await newPartner(database.db, database.sql);
      const { requestId, delivered, delivery } = await createOrderWithSubscriber(service, partner, '/off');
      expect(delivery.traceparent).toBeNull();
      expect(delivered.headers.traceparent).toBeUndefined();
      const line = service.logLines().find((l) => l.request_id === requestId);
      expect(line?.msg).toBe('request completed');
      expect(service.logLines().filter((l) => 'trace_id' in l || 'span_id' in l)).toEqual([]);
    } finally {
      await service.close();
    }
  });
});

describe('traces on', () => {
  const exporter = new InMemorySpanExporter();
  let telemetry: Telemetry | undefined;
  let service: Service;

  beforeAll(async () => {
    // As main() does: after every module is imported, before an app, server or pool exists.
    telemetry = await startTelemetry({ serviceName: 'traces-e2e', spanProcessors: [new SimpleSpanProcessor(exporter)] });
    service = await startService();
  });
  afterAll(async () => {
    await service?.close();
    await telemetry?.shutdown();
  });

  const spanId = (span: ReadableSpan) => span.spanContext().spanId;
  const traceOf = (traceId: string) => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
  /** The span's ancestors within its trace, nearest first. */
  function ancestors(span: ReadableSpan, spans: ReadableSpan[]): ReadableSpan[] {
    const chain: ReadableSpan[] = [];
    for (let parent = span.parentSpanContext; parent; ) {
      const found = spans.find((s) => spanId(s) === parent!.spanId);
      if (!found) break;
      chain.push(found);
      parent = found.parentSpanContext;
    }
    return chain;
  }

  it('a create request is one trace: the HTTP server span, the create transaction and, through the outbox, the webhook attempt', async () => {
    expect(isPatched(http.Server.prototype.emit)).toBe(true);
    expect(isPatched(express.application.use)).toBe(true);
    expect(isPatched(pg.Client.prototype.query)).toBe(true);

    const partner = await newPartner(database.db, database.sql);
    const { orderId, delivered, delivery } = await createOrderWithSubscriber(service, partner, '/on?token=partner-secret');
    const attempt = await eventually(async () => {
      const found = exporter.getFinishedSpans().find((s) => s.name === 'webhooks.attempt' && s.attributes['webhooks.delivery_id'] === delivery.id);
      expect(found).toBeDefined();
      return found!;
    });
    const traceId = attempt.spanContext().traceId;
    const spans = traceOf(traceId);

    const create = spans.find((s) => s.name === 'orders.create')!;
    expect(create, 'the create transaction span is in the attempt’s trace').toBeDefined();
    const server = spans.find((s) => s.kind === SpanKind.SERVER)!;
    expect(server.attributes['http.request.method']).toBe('POST');
    expect(server.attributes['url.path']).toBe(`${PARTNER_BASE_PATH}/v1/orders`);
    expect(server.attributes['http.response.status_code']).toBe(201);
    // The server span is the trace's root; the transaction descends from it; the attempt's parent is
    // the transaction, the span active when the outbox row was written.
    expect(server.parentSpanContext).toBeUndefined();
    expect(ancestors(create, spans).at(-1)).toBe(server);
    expect(attempt.parentSpanContext?.spanId).toBe(spanId(create));
    expect(delivery.traceparent).toBe(`00-${traceId}-${spanId(create)}-01`);
    expect(attempt.kind).toBe(SpanKind.CLIENT);
    expect(attempt.attributes).toMatchObject({
      'webhooks.attempt': 1,
      'webhooks.event_type': 'order.created',
      'webhooks.outcome': 'delivered',
      'http.response.status_code': 200,
      'url.full': receiver.url('/on'),
    });
    // The attempt also points at the worker's batch span (its own trace), which loaded the delivery.
    const batch = exporter.getFinishedSpans().find((s) => s.name === 'webhooks.batch' && spanId(s) === attempt.links[0]?.context.spanId)!;
    expect(batch.links.map((l) => l.context.spanId)).toContain(spanId(create));
    expect(exporter.getFinishedSpans().some((s) => s.name === 'webhooks.load_deliveries' && s.parentSpanContext?.spanId === spanId(batch))).toBe(true);

    // Our trace context stays ours: the partner's receiver gets the spec's headers only.
    expect(delivered.headers.traceparent).toBeUndefined();
    // Nothing personal or secret in any span of the trace: no patient data, key, query string or client address.
    const attributes = JSON.stringify(spans.map((s) => s.attributes));
    for (const secret of [PATIENT_NAME, partner.key, 'partner-secret', partner.subject]) expect(attributes).not.toContain(secret);
    for (const span of spans) expect(Object.keys(span.attributes)).not.toEqual(expect.arrayContaining(['url.query']));
    expect(spans.filter((s) => 'client.address' in s.attributes || 'network.peer.address' in s.attributes).map((s) => s.name)).toEqual(['webhooks.attempt']);
    expect(orderId).toMatch(/.+/);
  });

  it('the log lines written while serving a request carry its trace_id', async () => {
    const partner = await newPartner(database.db, database.sql);
    const { requestId, delivery } = await createOrderWithSubscriber(service, partner, '/logged');
    const traceId = delivery.traceparent!.split('-')[1];
    const line = service.logLines().find((l) => l.request_id === requestId);
    expect(line?.msg).toBe('request completed');
    expect(line?.trace_id).toBe(traceId);
    expect(traceOf(traceId).map(spanId)).toContain(line?.span_id);
  });

  it('probes are not traced, and a query string never reaches a server span', async () => {
    const before = exporter.getFinishedSpans().length;
    expect((await fetch(`${service.api.url}/livez`)).status).toBe(200);
    expect((await fetch(`${service.api.url}/readyz`)).status).toBe(200);
    const partner = await newPartner(database.db, database.sql);
    const events = await fetch(`${service.api.url}${PARTNER_BASE_PATH}/v1/events?limit=1&cursor=not-a-cursor`, { headers: { authorization: `Bearer ${partner.key}` } });
    expect(events.status).toBe(400);
    const servers = await eventually(async () => {
      // The API's server spans only (the receiver in this process is traced as well).
      const path = (s: ReadableSpan) => String(s.attributes['url.path']);
      const found = exporter.getFinishedSpans().slice(before).filter((s) => s.kind === SpanKind.SERVER && (path(s).startsWith(PARTNER_BASE_PATH) || ['/livez', '/readyz'].includes(path(s))));
      expect(found).toHaveLength(1);
      return found;
    });
    expect(servers[0].attributes['url.path']).toBe(`${PARTNER_BASE_PATH}/v1/events`);
    expect(servers[0].attributes['http.response.status_code']).toBe(400);
    expect(JSON.stringify(servers[0].attributes)).not.toContain('not-a-cursor');
  });
});

/** An OTLP/HTTP collector (JSON encoding): the spans it received, flattened. */
async function startCollector() {
  const spans: { service: string; name: string; traceId: string; attributes: Record<string, unknown> }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        for (const resource of JSON.parse(body).resourceSpans ?? []) {
          const service = resource.resource.attributes.find((a: any) => a.key === 'service.name')?.value.stringValue;
          for (const scope of resource.scopeSpans)
            for (const span of scope.spans)
              spans.push({ service, name: span.name, traceId: span.traceId, attributes: Object.fromEntries(span.attributes.map((a: any) => [a.key, Object.values(a.value)[0]])) });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('the API process, as production starts it', () => {
  const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
  const runApi = (env: Record<string, string>, port: number) =>
    spawn(process.execPath, ['tools/build/run-bundled.mjs', 'apps/partner-api/src/main.ts'], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: testDatabaseUrl(), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', PARTNER_METRICS_PORT: '0', PARTNER_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });

  it('exports to the OTLP endpoint the OTEL_* variables name, and its log lines carry the trace ids', async () => {
    const collector = await startCollector();
    const port = await freePort();
    const child = runApi({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' }, port);
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await eventually(async () => expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200), 45_000);
      const response = await fetch(`http://127.0.0.1:${port}/api/public/partner-openapi?probe=1`);
      expect(response.status).toBe(200);
      const requestId = response.headers.get('x-request-id');
      const span = await eventually(async () => {
        const found = collector.spans.find((s) => s.attributes['url.path'] === '/api/public/partner-openapi');
        expect(found).toBeDefined();
        return found!;
      });
      expect(span).toMatchObject({ service: 'partner-api', name: 'GET /api/public/partner-openapi', attributes: { 'http.route': '/api/public/partner-openapi', 'http.response.status_code': 200 } });
      expect(span.attributes).not.toHaveProperty('url.query');
      // The readiness probes polled above are not traced.
      expect(collector.spans.filter((s) => s.attributes['url.path'] === '/readyz')).toEqual([]);
      const line = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.request_id === requestId);
      expect(line).toMatchObject({ msg: 'request completed', trace_id: span.traceId });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await collector.close();
    }
  });

  it('refuses a bad OTEL_* value at start, in one line, like any other setting', async () => {
    const child = runApi({ OTEL_TRACES_EXPORTER: 'jaeger' }, await freePort());
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stderr.trim()).toBe('invalid configuration: OTEL_TRACES_EXPORTER: unknown exporter "jaeger" (otlp, console, zipkin or none)');
  });
});
