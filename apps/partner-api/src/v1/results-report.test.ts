import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getReportAvailability, laboratoryCaller } from '@lop/domain';
import { connectFixtures, type TestApi } from '../testing/harness';
import { buildTenant, fixtures, type Tenant } from '../testing/tenant';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { callerOf, orderBody, ordersClient, startObservedApi, type OrdersClient } from '../testing/orders';
import type { DataProtector } from '@lop/domain';

const PDF_BASE64 = Buffer.from('%PDF-1.4\n% a laboratory report\n').toString('base64');

describe('report: a short-lived, key-bound path to a document the laboratory supplied — never fabricated', () => {
  let api: TestApi & { protector: DataProtector };
  const connection = connectFixtures();
  const f = fixtures(connection.db);
  const lab = laboratoryCaller({ db: connection.db });
  let tenant: Tenant;
  let client: OrdersClient;
  let subject: string;

  beforeAll(async () => {
    api = await startObservedApi();
    tenant = await buildTenant(f);
    client = ordersClient(api, await tenant.key());
    subject = await client.subject();
  });
  afterAll(async () => {
    await api?.close();
    await connection.close();
  });

  /** An order in testing with one recorded version, with or without a report document. */
  async function recordedVersion(withDocument: boolean) {
    const orderId = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201).order_id;
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    const recorded = await lab.recordResult({
      order_id: orderId,
      source_result_id: 'LIS-R-1',
      performing_laboratory_system: 'Sunquest LIS 8',
      observations: [{ analyte: 'TSH', value: '2.1', unit: 'mIU/L' }],
      ...(withDocument ? { report: { content_type: 'application/pdf', content_base64: PDF_BASE64 } } : {}),
    });
    return { orderId, resultId: recorded.result.result_id };
  }
  async function releasedVersion(withDocument: boolean) {
    const version = await recordedVersion(withDocument);
    await lab.releaseResult({ result_id: version.resultId, as: 'final' });
    return version;
  }
  const reportPath = (orderId: string, resultId: string) => `/v1/orders/${orderId}/results/${resultId}/report`;

  it('200 with a relative retrieval path when the released version has a document; following it returns the document', async () => {
    const { orderId, resultId } = await releasedVersion(true);
    const response = await api.call('GET', reportPath(orderId, resultId), { key: client.key });
    const data = expectSuccess(response);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(data).toEqual({
      order_id: orderId,
      result_id: resultId,
      report: { available: true, state: 'available', reason: expect.any(String), retrieval_path: expect.any(String) },
    });
    const path: string = data.report.retrieval_path;
    expect(path).toMatch(new RegExp(`^/v1/orders/${orderId}/results/${resultId}/report/document\\?expires=\\d+&signature=[A-Za-z0-9_-]{43}$`));
    const expires = Number(new URL(path, 'http://x').searchParams.get('expires'));
    const now = Date.now() / 1000;
    expect(expires).toBeGreaterThan(now + 240);
    expect(expires).toBeLessThanOrEqual(now + 301);

    const document = await api.call('GET', path, { key: client.key });
    expect(expectSuccess(document)).toEqual({ order_id: orderId, result_id: resultId, content_type: 'application/pdf', content_base64: PDF_BASE64 });
    expect(document.headers.get('cache-control')).toBe('no-store');
  });

  it('404 report_not_modeled when the released version has no document', async () => {
    const { orderId, resultId } = await releasedVersion(false);
    const error = expectError(await api.call('GET', reportPath(orderId, resultId), { key: client.key }), 404, 'report_not_modeled');
    expect(error.message).toMatch(/no report is fabricated/);
  });

  it('404 not_found while the version is unreleased, even when it has a document', async () => {
    const { orderId, resultId } = await recordedVersion(true);
    expectError(await api.call('GET', reportPath(orderId, resultId), { key: client.key }), 404, 'not_found');
    expectError(await api.call('GET', reportPath(orderId, '00000000-0000-4000-8000-000000000000'), { key: client.key }), 404, 'not_found');
  });

  it('the document route refuses an expired, tampered, other-key or reused-elsewhere path', async () => {
    const { orderId, resultId } = await releasedVersion(true);
    const path: string = expectSuccess(await api.call('GET', reportPath(orderId, resultId), { key: client.key })).report.retrieval_path;
    const url = new URL(path, 'http://x');
    const expires = url.searchParams.get('expires')!;
    const signature = url.searchParams.get('signature')!;
    const documentPath = url.pathname;
    const flipped = `${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`;

    // Signed by this server for this key, but ten minutes ago.
    const caller = await callerOf(connection.sql, client.key);
    const old = await getReportAvailability(connection.db, caller, api.protector, orderId, resultId, new Date(Date.now() - 10 * 60_000));
    const expired = expectError(await api.call('GET', old.report.retrieval_path, { key: client.key }), 404, 'not_found');
    expect(expired.message).toMatch(/expired/);

    expectError(await api.call('GET', `${documentPath}?expires=${expires}&signature=${flipped}`, { key: client.key }), 404, 'not_found');
    expectError(await api.call('GET', `${documentPath}?expires=${Number(expires) + 3600}&signature=${signature}`, { key: client.key }), 404, 'not_found');
    // The same client's second key, with every scope: the path belongs to the key that asked.
    expectError(await api.call('GET', path, { key: await tenant.key() }), 404, 'not_found');
    // The path of one result does not open another result of the same order.
    const other = await lab.recordResult({ order_id: orderId, source_result_id: 'LIS-R-2', performing_laboratory_system: 'LIS', observations: [{ a: '1' }], report: { content_type: 'text/plain', content_base64: 'aGk=' } });
    await lab.releaseResult({ result_id: other.result.result_id, as: 'corrected' });
    expectError(await api.call('GET', `/v1/orders/${orderId}/results/${other.result.result_id}/report/document?expires=${expires}&signature=${signature}`, { key: client.key }), 404, 'not_found');
    // Without the query it is a malformed request; without a key, unauthenticated.
    expectError(await api.call('GET', documentPath, { key: client.key }), 400, 'invalid_request');
    expectError(await api.call('GET', path), 401, 'unauthorized');
    // The untouched path still works: nothing above consumed it.
    expectSuccess(await api.call('GET', path, { key: client.key }));
  });

  it('needs the results:read scope, on both routes', async () => {
    const { orderId, resultId } = await releasedVersion(true);
    const path: string = expectSuccess(await api.call('GET', reportPath(orderId, resultId), { key: client.key })).report.retrieval_path;
    const key = await tenant.key({ scopes: ['orders:read'] });
    expectError(await api.call('GET', reportPath(orderId, resultId), { key }), 403, 'forbidden');
    expectError(await api.call('GET', path, { key }), 403, 'forbidden');
  });
});
