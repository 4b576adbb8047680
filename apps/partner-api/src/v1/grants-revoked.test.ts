import { beforeAll, describe, expect, it } from 'vitest';
import { grantPrograms, laboratoryCaller } from '@lop/domain';
import { type TestResponse } from '../testing/harness';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { REPORT_PDF_BASE64, orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/**
 * The spec's read rule names the program: an order, its results, its report and a retrieval path
 * already issued answer only while the order's program is granted to the client in its
 * environment. A withdrawn grant makes them 404 on both doors, exactly like an ungranted program;
 * granting again brings them back (nothing was deleted).
 */
describe('a withdrawn program grant hides the program’s orders, results, reports and retrievals on both doors', () => {
  const scene = useScene({ rateLimit: false, client: true });
  const { api, tenant, client, connection, fixtures: f } = scene;
  const lab = laboratoryCaller({ db: connection.db });
  let orderId: string;
  let resultId: string;
  let retrievalPath: string;
  /** An order of another program of the same client, still granted: it must stay readable. */
  let otherOrderId: string;

  beforeAll(async () => {
    const { subject } = scene;
    orderId = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201).order_id;
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    const recorded = await lab.recordResult({
      order_id: orderId,
      source_result_id: 'LIS-R-1',
      performing_laboratory_system: 'Sunquest LIS 8',
      observations: [{ analyte: 'TSH', value: '2.1', unit: 'mIU/L' }],
      report: { content_type: 'application/pdf', content_base64: REPORT_PDF_BASE64 },
    });
    resultId = recorded.result.result_id;
    await lab.releaseResult({ result_id: resultId, as: 'final' });
    retrievalPath = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results/${resultId}/report`, { key: client.key })).report.retrieval_path;

    const other = await f.program(tenant.laboratory.id, { environment: 'sandbox', serviceGeography: [tenant.region] });
    const otherItem = await f.item(other.id);
    await f.grant(tenant.clientId, other);
    otherOrderId = expectSuccess(await client.create(orderBody(other, otherItem, subject)), 201).order_id;
  });

  const trpc = (procedure: string, input: unknown) =>
    api.fetch('GET', `/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: { authorization: `Bearer ${client.key}` } });
  const trpcPost = (procedure: string, input: unknown) => api.fetch('POST', `/api/trpc/${procedure}`, { json: input, headers: { authorization: `Bearer ${client.key}` } });

  /** Every read of the order, on REST and on the console's tRPC door. */
  const reads = (): [string, () => Promise<TestResponse>][] => [
    ['GET program', () => api.call('GET', `/v1/programs/${tenant.sandbox.program.id}`, { key: client.key })],
    ['GET order', () => client.get(orderId)],
    ['GET exceptions', () => api.call('GET', `/v1/orders/${orderId}/exceptions`, { key: client.key })],
    ['GET results', () => api.call('GET', `/v1/orders/${orderId}/results`, { key: client.key })],
    ['GET result', () => api.call('GET', `/v1/orders/${orderId}/results/${resultId}`, { key: client.key })],
    ['GET report', () => api.call('GET', `/v1/orders/${orderId}/results/${resultId}/report`, { key: client.key })],
    ['GET result as FHIR', () => api.call('GET', `/v1/orders/${orderId}/results/${resultId}/fhir`, { key: client.key })],
    ['GET the retrieval path issued before', () => api.call('GET', retrievalPath, { key: client.key })],
    ['tRPC orders.get', () => trpc('orders.get', { orderId })],
    ['tRPC results.list', () => trpc('results.list', { orderId })],
    ['tRPC results.fhir', () => trpc('results.fhir', { orderId, resultId })],
    ['tRPC console.orderScenarios', () => trpc('console.orderScenarios', { orderId })],
  ];

  const consoleOrderIds = async () => {
    const response = await trpc('console.orders', { limit: 100 });
    expect(response.status, response.text).toBe(200);
    return response.body.result.data.data.orders.map((o: { order_id: string }) => o.order_id) as string[];
  };

  it('granted: every read answers 200', async () => {
    for (const [name, read] of reads()) expect((await read()).status, name).toBe(200);
    expect(await consoleOrderIds()).toEqual(expect.arrayContaining([orderId, otherOrderId]));
  });

  it('withdrawn: every read is 404 not_found on both doors, cancel and simulate too; the other program’s order still answers', async () => {
    await connection.sql`delete from program_grants where client_id = ${tenant.clientId} and program_id = ${tenant.sandbox.program.id}`;
    try {
      for (const [name, read] of reads()) {
        const response = await read();
        expect(response.status, `${name}: ${response.text}`).toBe(404);
        if (!name.startsWith('tRPC')) expectError(response, 404, 'not_found');
        else expect(response.text).toContain('not_found');
      }
      expectError(await client.cancel(orderId), 404, 'not_found');
      expectError(await api.call('POST', `/v1/sandbox/orders/${orderId}/simulate`, { key: client.key, json: { scenario: 'happy_path' } }), 404, 'not_found');
      expect((await trpcPost('sandbox.simulate', { orderId, scenario: 'happy_path' })).status).toBe(404);
      expect(await consoleOrderIds()).not.toContain(orderId);
      expect(await consoleOrderIds()).toContain(otherOrderId);
      expect(expectSuccess(await client.get(otherOrderId)).order_id).toBe(otherOrderId);
    } finally {
      await grantPrograms(connection.db, { clientId: tenant.clientId, environment: 'sandbox', programId: tenant.sandbox.program.id });
    }
  });

  it('granted again: the same order, results and report answer 200 (nothing was deleted)', async () => {
    for (const [name, read] of reads()) expect((await read()).status, name).toBe(200);
    expect(expectSuccess(await client.get(orderId)).lifecycle).toBe('completed');
  });
});
