import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, connectDatabase, type TestDatabase } from '@lop/db';
import { laboratoryCaller } from '@lop/domain';
import { buildTenant, fixtures, testDatabaseUrl } from '@lop/testing';
import { startTestApi, type TestApi, type TestResponse } from '../testing/harness';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { NO_RATE_LIMIT, REPORT_PDF_BASE64, orderBody, ordersClient } from '../testing/orders';
import { useScene } from '../testing/scene';

/**
 * docs/audit.md: every answered read of an order, its exceptions and results, a result, its FHIR
 * view, a report and a report document leaves one audit record, on both doors, with the request id
 * the answer carried; refusals are recorded with their status, an unrecognised key is not; and a
 * read whose record cannot be written is answered 503, never with data.
 */
interface AuditRow {
  kind: string;
  action: string;
  door: string;
  route: string | null;
  status: number;
  key_id: string;
  client_id: string;
  laboratory_id: string;
  environment: string;
  order_id: string | null;
  resource_id: string | null;
  details: Record<string, string> | null;
  actor: string;
}

describe('the audit trail of partner reads', () => {
  const scene = useScene({ rateLimit: false, client: true });
  const { api, tenant, client, connection } = scene;
  const lab = laboratoryCaller({ db: connection.db });
  let orderId: string;
  let resultId: string;

  const recordsOf = (requestId: string) => connection.sql<AuditRow[]>`select kind, action, door, route, status, key_id, client_id, laboratory_id, environment, order_id, resource_id, details, actor from audit_records where request_id = ${requestId}`;
  const requestIdOf = (response: TestResponse) => response.headers.get('x-request-id')!;
  const trpc = (procedure: string, input: unknown, key = client.key) =>
    api.fetch('GET', `/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: { authorization: `Bearer ${key}` } });

  beforeAll(async () => {
    const { subject } = scene;
    orderId = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201).order_id;
    for (const step of ['accept', 'collect', 'receive', 'accession'] as const) await lab[step]({ order_id: orderId });
    const recorded = await lab.recordResult({
      order_id: orderId,
      source_result_id: 'LIS-AUDIT-1',
      performing_laboratory_system: 'Sunquest LIS 8',
      observations: [{ analyte: 'TSH', value: '2.1', unit: 'mIU/L' }],
      report: { content_type: 'application/pdf', content_base64: REPORT_PDF_BASE64 },
    });
    resultId = recorded.result.result_id;
    await lab.releaseResult({ result_id: resultId, as: 'final' });
  });

  it('records each read route once, on REST and on the console door, with who, what, the route, the status and the request id', async () => {
    const report = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results/${resultId}/report`, { key: client.key }));
    const retrievalPath: string = report.report.retrieval_path;
    const retrievalId = new URL(retrievalPath, 'http://x').searchParams.get('retrieval_id');
    const reads: [string, string, string | null, () => Promise<TestResponse>][] = [
      ['orders.get', 'GET /v1/orders/{orderId}', null, () => client.get(orderId)],
      ['orders.exceptions', 'GET /v1/orders/{orderId}/exceptions', null, () => api.call('GET', `/v1/orders/${orderId}/exceptions`, { key: client.key })],
      ['results.list', 'GET /v1/orders/{orderId}/results', null, () => api.call('GET', `/v1/orders/${orderId}/results`, { key: client.key })],
      ['results.get', 'GET /v1/orders/{orderId}/results/{resultId}', resultId, () => api.call('GET', `/v1/orders/${orderId}/results/${resultId}`, { key: client.key })],
      ['results.fhir', 'GET /v1/orders/{orderId}/results/{resultId}/fhir', resultId, () => api.call('GET', `/v1/orders/${orderId}/results/${resultId}/fhir`, { key: client.key })],
      ['results.report', 'GET /v1/orders/{orderId}/results/{resultId}/report', resultId, () => api.call('GET', `/v1/orders/${orderId}/results/${resultId}/report`, { key: client.key })],
      ['results.reportDocument', 'GET /v1/orders/{orderId}/results/{resultId}/report/document', resultId, () => api.call('GET', retrievalPath, { key: client.key })],
    ];
    const procedures = new Set<string>();
    for (const [action, route, resource, read] of reads) {
      const response = await read();
      expect(response.status, `${action}: ${response.text}`).toBe(200);
      const rows = await recordsOf(requestIdOf(response));
      expect(rows, action).toHaveLength(1);
      expect(rows[0]).toMatchObject({ kind: 'read', door: 'rest', route, status: 200, client_id: tenant.clientId, laboratory_id: tenant.laboratory.id, environment: 'sandbox', order_id: orderId, resource_id: resource });
      expect(rows[0].actor).toMatch(/^key:lop_test_/);
      procedures.add(rows[0].action);
      if (action === 'results.reportDocument') expect(rows[0].details).toEqual({ retrieval_id: retrievalId });
    }
    // One action name per route (the procedure's path), whatever the router calls them.
    expect(procedures.size).toBe(reads.length);

    const console = await trpc('orders.get', { orderId });
    expect(console.status, console.text).toBe(200);
    const [consoleRow] = await recordsOf(requestIdOf(console));
    expect(consoleRow).toMatchObject({ kind: 'read', door: 'console', route: 'GET /v1/orders/{orderId}', status: 200, order_id: orderId });
    const fhir = await trpc('results.fhir', { orderId, resultId });
    expect(fhir.status, fhir.text).toBe(200);
    expect(await recordsOf(requestIdOf(fhir))).toMatchObject([{ door: 'console', status: 200, resource_id: resultId }]);
  });

  it('records refusals with their status (404 of an unknown order, 403 of a key without the scope, a malformed id) and not a call without a recognised key', async () => {
    const unknown = await client.get('00000000-0000-4000-8000-000000000000');
    expectError(unknown, 404, 'not_found');
    expect(await recordsOf(requestIdOf(unknown))).toMatchObject([{ status: 404, order_id: '00000000-0000-4000-8000-000000000000' }]);

    const narrow = await tenant.key({ scopes: ['orders:write'] });
    const forbidden = await api.call('GET', `/v1/orders/${orderId}`, { key: narrow });
    expectError(forbidden, 403, 'forbidden');
    expect(await recordsOf(requestIdOf(forbidden))).toMatchObject([{ status: 403, order_id: orderId }]);

    // A path that is not an id is the caller's text (a name, an email, a NUL byte): the refusal is
    // recorded, the text is not; a NUL once made the record's insert fail and the refusal a 503.
    for (const text of ['x'.repeat(300), encodeURIComponent('Ada Lovelace ada@example.org'), '%00']) {
      const malformed = await api.call('GET', `/v1/orders/${text}/results`, { key: client.key });
      expect(malformed.status, text).toBeGreaterThanOrEqual(400);
      expect(malformed.status, text).toBeLessThan(500);
      const [row] = await recordsOf(requestIdOf(malformed));
      expect(row, text).toMatchObject({ status: malformed.status, order_id: null });
    }

    const anonymous = await api.call('GET', `/v1/orders/${orderId}`);
    expectError(anonymous, 401, 'unauthorized');
    const revoked = await api.call('GET', `/v1/orders/${orderId}`, { key: await tenant.key({ revoked: true }) });
    expectError(revoked, 401, 'unauthorized');
    expect(await recordsOf(requestIdOf(anonymous))).toEqual([]);
    expect(await recordsOf(requestIdOf(revoked))).toEqual([]);
  });

  it('does not record reads that are not audited routes (the program catalogue)', async () => {
    const response = await api.call('GET', `/v1/programs/${tenant.sandbox.program.id}`, { key: client.key });
    expect(response.status).toBe(200);
    expect(await recordsOf(requestIdOf(response))).toEqual([]);
  });
});

describe('a read whose audit record cannot be written', () => {
  let database: TestDatabase;
  let api: TestApi;
  afterAll(async () => {
    await api?.close();
    await database?.drop();
  });

  it('is answered 503 with the error envelope and no data, on both doors, and answered again once records can be written', async () => {
    // Its own database: making the audit table refuse inserts must not touch other test files.
    database = await createTestDatabase(testDatabaseUrl(), 'audit_fail');
    const connection = connectDatabase(database.url, { max: 2 });
    try {
      const f = fixtures(connection.db);
      api = await startTestApi(NO_RATE_LIMIT, database.url);
      const tenant = await buildTenant(f);
      const client = ordersClient(api, await tenant.key());
      const orderId = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, await client.subject())), 201).order_id;
      expect((await client.get(orderId)).status).toBe(200);

      // Every insert into audit_records now fails (a trigger stands for a full disk or a lost primary).
      await connection.sql.unsafe(`
        create function refuse_audit() returns trigger language plpgsql as $$ begin raise exception 'audit store unavailable'; end $$;
        create trigger refuse_audit before insert on audit_records for each row execute function refuse_audit();`);
      const refused = await client.get(orderId);
      expectError(refused, 503, 'unavailable');
      expect(refused.text).not.toContain(tenant.sandbox.program.id);
      const console = await api.fetch('GET', `/api/trpc/orders.get?input=${encodeURIComponent(JSON.stringify({ orderId }))}`, { headers: { authorization: `Bearer ${client.key}` } });
      expect(console.status).toBe(503);
      expect(console.body.error.data.partner.error.code).toBe('unavailable');
      expect(console.text).not.toContain(tenant.sandbox.program.id);
      // A refusal is not answered either when its record cannot be written.
      expectError(await client.get('00000000-0000-4000-8000-000000000000'), 503, 'unavailable');

      await connection.sql`drop trigger refuse_audit on audit_records`;
      expect((await client.get(orderId)).status).toBe(200);
    } finally {
      await connection.close();
    }
  });
});
