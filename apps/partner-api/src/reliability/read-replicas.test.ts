import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { startReplicaPair, type ReplicaPair } from '@lop/db/testing/replica';
import { laboratoryCaller, loadConfig } from '@lop/domain';
import { buildTenant, eventually, fixtures, unique, type Tenant } from '@lop/testing';
import { killAllApiProcesses, PROCESS_ENCRYPTION_KEY, startApiProcess, type ApiProcess } from '../testing/api-process';
import { expectSuccess } from '../testing/expect-envelope';
import { startTestApi, testApi, type TestApi } from '../testing/harness';
import { NO_RATE_LIMIT, orderBody, ordersClient, REPORT_PDF_BASE64, type OrdersClient } from '../testing/orders';
import { createLogger, startPartnerApi } from '../main';

/**
 * DATABASE_READ_URL against a real streaming replica of a real primary (libs/db/src/testing/replica.ts):
 * read-your-writes with the replica's replay paused, reads answered by the replica once it has
 * replayed, a lagging replica skipped, and a stopped replica costing no request.
 */
describe('read replicas (DATABASE_READ_URL)', () => {
  let pair: ReplicaPair;
  let database: TestDatabase;
  let connection: DatabaseConnection;
  let api: TestApi;
  let metricsUrl: string;
  let other: ApiProcess | undefined;
  let tenant: Tenant;
  let bystanderTenant: Tenant;
  let writer: OrdersClient;
  let bystander: OrdersClient;
  let bystanderOrder: string;
  let writerSubject: string;

  const replicaEnv = (extra: Record<string, string> = {}) => ({
    ...NO_RATE_LIMIT,
    PARTNER_ENCRYPTION_KEY: PROCESS_ENCRYPTION_KEY,
    DATABASE_READ_URL: pair.onReplica(database.url),
    // Generous bounds: these tests prove the read-your-writes rule, not the lag bound (its own test lowers it).
    DATABASE_READ_MAX_LAG_SECONDS: '3600',
    DATABASE_READ_MAX_LAG_BYTES: String(1024 ** 3),
    ...extra,
  });
  /** partner_db_reads_total by route, from the process's metrics endpoint. */
  const readCounts = async (): Promise<Record<string, number>> => {
    const text = await (await fetch(`${metricsUrl}/metrics`)).text();
    return Object.fromEntries([...text.matchAll(/^partner_db_reads_total\{route="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
  };
  const readyz = async (target: TestApi) => (await target.fetch('GET', '/readyz')).body as { status: string; replicas: { name: string; state: string; lag_bytes?: number }[] };
  /** Changes an order's external id on the primary only, as no partner write would (no event): what a GET shows says which server answered. */
  const markOnPrimary = async (orderId: string) => {
    const marker = unique('primary-only');
    await connection.sql`update orders set external_order_id = ${marker} where id = ${orderId}`;
    return marker;
  };

  beforeAll(async () => {
    pair = await startReplicaPair();
    database = await createTestDatabase(pair.primaryUrl, 'replicas');
    connection = connectDatabase(database.url, { max: 2, applicationName: 'replica-test-fixtures' });
    const f = fixtures(connection.db);
    tenant = await buildTenant(f);
    bystanderTenant = await buildTenant(f);
    // The real process's start (startPartnerApi) with its metrics endpoint, which counts where reads were answered.
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', PARTNER_DB_POOL_SIZE: '4', ...replicaEnv() });
    const running = await startPartnerApi({ config, databaseUrl: database.url, logger: createLogger(config, 'replica-test'), metrics: { port: 0 } });
    api = testApi(running.url, () => running.close());
    metricsUrl = running.metricsUrl!;
    writer = ordersClient(api, await tenant.key());
    bystander = ordersClient(api, await bystanderTenant.key());
    writerSubject = await writer.subject();
    const bystanderSubject = await bystander.subject();
    bystanderOrder = expectSuccess(await bystander.create(orderBody(bystanderTenant.sandbox.program, bystanderTenant.sandbox.item, bystanderSubject)), 201).order_id;
    await pair.waitForReplay();
    await eventually(async () => expect((await readyz(api)).replicas[0].state).toBe('up'));
  }, 180_000);

  afterAll(async () => {
    await other?.kill().catch(() => undefined);
    killAllApiProcesses();
    await api?.close();
    await connection?.close();
    await pair?.stop();
  }, 60_000);

  it('with replay paused, a partner reads its own create and cancel at once (answered by the primary), the event stream included, through either API process', { timeout: 120_000 }, async () => {
    other = await startApiProcess(database.url, replicaEnv());
    const otherApi = testApi(other.url, async () => undefined);
    const writerOnOther = ordersClient(otherApi, writer.key);
    // One order the replica has (replayed before the pause), so a stale read would show its older state, not a 404.
    const replayed = expectSuccess(await writer.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, writerSubject)), 201);
    await pair.waitForReplay();
    await pair.pauseReplay();
    const before = await readCounts();
    try {
      const created = expectSuccess(await writer.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, writerSubject)), 201);
      // The replica has not replayed the create: the next GET, on this process or another, is still 200.
      expect((await writer.get(created.order_id)).status).toBe(200);
      const seenByOther = expectSuccess(await writerOnOther.get(created.order_id), 200);
      expect(seenByOther.lifecycle).toBe(created.lifecycle);
      const { events } = expectSuccess(await writerOnOther.events(), 200) as { events: { type: string; data: { order_id?: string } }[] };
      expect(events.some((event) => event.type === 'order.created' && event.data.order_id === created.order_id)).toBe(true);

      // Cancelled through the other process, read back through this one and that one: never the older state.
      expectSuccess(await writerOnOther.cancel(replayed.order_id), 200);
      expect(expectSuccess(await writer.get(replayed.order_id), 200).lifecycle).toBe('cancelled');
      expect(expectSuccess(await writerOnOther.get(replayed.order_id), 200).lifecycle).toBe('cancelled');
      expectSuccess(await writer.cancel(created.order_id), 200);
      expect(expectSuccess(await writerOnOther.get(created.order_id), 200).lifecycle).toBe('cancelled');
      // This process sent those reads to the primary because the replica was behind the client, not by failing over.
      const after = await readCounts();
      expect(after.primary_behind_client - before.primary_behind_client).toBe(2);
      expect(after.primary_after_not_found).toBe(before.primary_after_not_found);

      // Meanwhile the replica really is behind: it has neither the order nor the cancel.
      const replica = connectDatabase(pair.onReplica(database.url), { max: 1 });
      try {
        expect(await replica.sql`select id from orders where id = ${created.order_id}`).toEqual([]);
        expect(await replica.sql`select lifecycle_detail from orders where id = ${replayed.order_id}`).toEqual([{ lifecycle_detail: 'received' }]);
      } finally {
        await replica.close();
      }
    } finally {
      await pair.resumeReplay();
    }
  });

  it('a client whose stream the replica has replayed reads from the replica, even while replay is paused', { timeout: 60_000 }, async () => {
    await pair.waitForReplay();
    await eventually(async () => expect((await readyz(api)).replicas[0].state).toBe('up'));
    const before = expectSuccess(await bystander.get(bystanderOrder), 200).external_order_id as string;
    await pair.pauseReplay();
    try {
      const marker = await markOnPrimary(bystanderOrder);
      // The bystander wrote nothing since the replica replayed its stream: the replica answers, with what it has.
      expect(expectSuccess(await bystander.get(bystanderOrder), 200).external_order_id).toBe(before);
      await pair.resumeReplay();
      await pair.waitForReplay();
      expect(expectSuccess(await bystander.get(bystanderOrder), 200).external_order_id).toBe(marker);
    } finally {
      await pair.resumeReplay();
    }
  });

  it('a read waiting on the stream (wait) answered first by the replica gets an event committed while replay is paused: the woken read goes to the primary', { timeout: 60_000 }, async () => {
    await pair.waitForReplay();
    await eventually(async () => expect((await readyz(api)).replicas[0].state).toBe('up'));
    let cursor = '';
    for (let more = true; more; ) {
      const data = expectSuccess(await bystander.events(`?limit=500${cursor ? `&cursor=${cursor}` : ''}`));
      [cursor, more] = [data.next_cursor, data.has_more];
    }
    await pair.pauseReplay();
    try {
      const before = await readCounts();
      const started = Date.now();
      const waiting = bystander.events(`?cursor=${cursor}&wait=25`);
      // Committed on the primary while the read waits (or just before it did): the replica never sees it in time.
      const created = expectSuccess(await bystander.create(orderBody(bystanderTenant.sandbox.program, bystanderTenant.sandbox.item, await bystander.subject())), 201);
      const { events } = expectSuccess(await waiting) as { events: { type: string; data: { order_id?: string } }[] };
      expect(events.map((event) => [event.type, event.data.order_id])).toEqual([['order.created', created.order_id]]);
      expect(Date.now() - started).toBeLessThan(20_000);
      // Its first read was the replica's (the bystander's stream was replayed), not a failover.
      expect((await readCounts()).replica).toBeGreaterThan(before.replica ?? 0);
    } finally {
      await pair.resumeReplay();
    }
  });

  it('every replica-safe route is answered by the replica itself, without failing over: order, exceptions, results, result, FHIR, report document, stream, programs, catalog, requirements', { timeout: 60_000 }, async () => {
    const lab = laboratoryCaller({ db: connection.db });
    const { program: programRow, item } = bystanderTenant.sandbox;
    const program = programRow.id;
    const orderId = expectSuccess(await bystander.create(orderBody(programRow, item, await bystander.subject())), 201).order_id;
    for (const step of ['accept', 'collect', 'receive', 'accession'] as const) await lab[step]({ order_id: orderId });
    const recorded = await lab.recordResult({
      order_id: orderId,
      source_result_id: 'LIS-R-1',
      performing_laboratory_system: 'Sunquest LIS 8',
      observations: [{ analyte: 'TSH', value: '2.1', unit: 'mIU/L' }],
      report: { content_type: 'application/pdf', content_base64: REPORT_PDF_BASE64 },
    });
    const resultId = recorded.result.result_id;
    await lab.releaseResult({ result_id: resultId, as: 'final' });
    // The report endpoint issues a retrieval record (a write: the primary); following it is a replica read.
    const documentPath: string = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results/${resultId}/report`, { key: bystander.key })).report.retrieval_path;
    await pair.waitForReplay();
    await eventually(async () => expect((await readyz(api)).replicas[0].state).toBe('up'));

    const before = await readCounts();
    const paths = [
      `/v1/orders/${orderId}`,
      `/v1/orders/${orderId}/exceptions`,
      `/v1/orders/${orderId}/results`,
      `/v1/orders/${orderId}/results/${resultId}`,
      `/v1/orders/${orderId}/results/${resultId}/fhir`,
      documentPath,
      '/v1/events',
      '/v1/programs',
      `/v1/programs/${program}`,
      `/v1/programs/${program}/catalog`,
      `/v1/programs/${program}/requirements`,
    ];
    for (const path of paths) {
      const response = await api.call('GET', path, { key: bystander.key });
      expect(response.status, `${path}: ${response.text}`).toBe(200);
    }
    const after = await readCounts();
    expect({ ...after, replica: after.replica - before.replica }).toEqual({ ...before, replica: paths.length });
  });

  it('a replica lagging beyond DATABASE_READ_MAX_LAG_BYTES is skipped: every read goes to the primary', { timeout: 60_000 }, async () => {
    const strict = await startTestApi(replicaEnv({ DATABASE_READ_MAX_LAG_BYTES: '0', DATABASE_READ_MAX_LAG_SECONDS: '3600' }), database.url);
    try {
      await pair.pauseReplay();
      const marker = await markOnPrimary(bystanderOrder);
      await eventually(async () => expect((await readyz(strict)).replicas[0]).toMatchObject({ state: 'lagging' }));
      // The generous process still reads the bystander from the replica (old value); the strict one skips it.
      expect(expectSuccess(await bystander.get(bystanderOrder), 200).external_order_id).not.toBe(marker);
      expect(expectSuccess(await ordersClient(strict, bystander.key).get(bystanderOrder), 200).external_order_id).toBe(marker);
    } finally {
      await pair.resumeReplay();
      await strict.close();
    }
  });

  it('a replica that stops costs no request: reads answer 200 from the primary, and /readyz says the replica is down', { timeout: 60_000 }, async () => {
    await pair.waitForReplay();
    const created = expectSuccess(await writer.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, writerSubject)), 201);
    await pair.waitForReplay();
    const stopping = pair.stopReplica();
    const statuses: number[] = [];
    // Reads while the replica goes away and after: none may fail.
    for (let i = 0; i < 30; i++) {
      const responses = await Promise.all([writer.get(created.order_id), bystander.get(bystanderOrder), writer.events()]);
      statuses.push(...responses.map((response) => response.status));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await stopping;
    for (let i = 0; i < 5; i++) statuses.push((await bystander.get(bystanderOrder)).status, (await writer.events()).status);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    await eventually(async () => expect((await readyz(api)).replicas[0].state).toBe('down'));
    expect((await readyz(api)).status).toBe('ready');
  });
});
