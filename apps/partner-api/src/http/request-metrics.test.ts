import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSubscription, DataProtector, loadConfig } from '@lop/domain';
import { createLogger, startPartnerApi, type RunningApi } from '../main';
import { connectFixtures, testApi, type TestApi } from '../testing/harness';
import { NO_RATE_LIMIT, orderBody } from '../testing/orders';
import { buildTenant, fixtures, type Tenant, testDatabaseUrl } from '@lop/testing';

/** DESIGN §12: Prometheus metrics on a separate internal port, scraped here as Prometheus would. */
const connection = connectFixtures();
const encryptionKey = randomBytes(32);
let running: RunningApi;
let api: TestApi;
let tenant: Tenant;
let key: string;

beforeAll(async () => {
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', PARTNER_DB_POOL_SIZE: '4', PARTNER_ENCRYPTION_KEY: encryptionKey.toString('base64'), ...NO_RATE_LIMIT });
  running = await startPartnerApi({ config, databaseUrl: testDatabaseUrl(), logger: createLogger(config, 'metrics-test'), metrics: { port: 0 } });
  api = testApi(running.url, () => running.close());
  tenant = await buildTenant(fixtures(connection.db));
  key = await tenant.key();
});
afterAll(async () => {
  await api?.close();
  await connection.close();
});

async function scrape(): Promise<string> {
  const response = await fetch(`${running.metricsUrl}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  return response.text();
}

const sample = (text: string, name: string, labels: Record<string, string> = {}) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `) ? Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)) : false);
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

describe('Prometheus metrics', () => {
  it('are served on their own port, not on the partner port', async () => {
    expect(running.metricsUrl).toBeDefined();
    expect(new URL(running.metricsUrl!).port).not.toBe(new URL(running.url).port);
    expect((await api.fetch('GET', '/metrics')).status).toBe(404);
  });

  it('record request durations by route template and status, never by raw path', async () => {
    const orderId = '00000000-0000-4000-8000-000000000000';
    for (let i = 0; i < 3; i++) expect((await api.call('GET', '/v1/health', { key })).status).toBe(200);
    expect((await api.call('GET', `/v1/orders/${orderId}`, { key })).status).toBe(404);
    expect((await api.call('GET', '/v1/no-such-route', { key })).status).toBe(404);
    const text = await scrape();
    expect(sample(text, 'partner_http_request_duration_seconds_count', { method: 'GET', route: '/v1/health', status: '200' })).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'partner_http_request_duration_seconds_count', { method: 'GET', route: '/v1/orders/{orderId}', status: '404' })).toBe(1);
    expect(sample(text, 'partner_http_request_duration_seconds_count', { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(text).toContain('partner_http_request_duration_seconds_bucket{le="0.025"');
    expect(text).not.toContain(orderId);
  });

  it('show the webhook queue depth and outbox lag, delivery attempts and the process itself', async () => {
    await createSubscription(
      connection.db,
      new DataProtector(encryptionKey),
      { clientId: tenant.clientId, environment: 'sandbox', url: 'http://127.0.0.1:9/hooks', eventTypes: ['order.created'] },
      { allowLoopback: true, servicePorts: [] },
    );
    const subject = `metrics-${randomBytes(3).toString('hex')}`;
    expect((await api.call('PUT', `/v1/subjects/${subject}`, { key })).status).toBe(200);
    const created = await api.call('POST', '/v1/orders', { key, json: orderBody(tenant.sandbox.program, tenant.sandbox.item, subject), headers: { 'idempotency-key': randomBytes(8).toString('hex') } });
    expect(created.status, created.text).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const text = await scrape();
    // No worker runs in this test: the delivery waits, and its wait is the outbox lag.
    expect(sample(text, 'partner_webhook_queue_depth', { state: 'due' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'partner_webhook_outbox_lag_seconds')).toBeGreaterThanOrEqual(1);
    // events' partitions reach the current month and three more: at least two months ahead of now.
    expect(sample(text, 'partner_events_partition_horizon_seconds')).toBeGreaterThan(60 * 86_400);
    expect(text).toContain('# TYPE partner_webhook_delivery_attempts_total counter');
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'partner_metrics_database_read_failures_total')).toBe(0);
  });
});
