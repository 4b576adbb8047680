import { describe, expect, it } from 'vitest';
import { getReportAvailability, laboratoryCaller, revokeKey } from '@lop/domain';
import { buildTenant } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { callerOf, REPORT_PDF_BASE64, orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

describe('report: a short-lived, server-authorized retrieval record for a document the laboratory supplied — never signed, never fabricated', () => {
  const scene = useScene({ rateLimit: false, client: true });
  const { api, tenant, client, connection, fixtures: f } = scene;
  const lab = laboratoryCaller({ db: connection.db });

  /** An order in testing with one recorded version, with or without a report document. */
  async function recordedVersion(withDocument: boolean) {
    const orderId = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject)), 201).order_id;
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    const recorded = await lab.recordResult({
      order_id: orderId,
      source_result_id: 'LIS-R-1',
      performing_laboratory_system: 'Sunquest LIS 8',
      observations: [{ analyte: 'TSH', value: '2.1', unit: 'mIU/L' }],
      ...(withDocument ? { report: { content_type: 'application/pdf', content_base64: REPORT_PDF_BASE64 } } : {}),
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
    // Endpoint rule 3: nothing in the path authorizes by itself — it names a server-side record.
    const path: string = data.report.retrieval_path;
    expect(path).toMatch(new RegExp(`^/v1/orders/${orderId}/results/${resultId}/report/document\\?retrieval_id=[0-9a-f-]{36}$`));
    expect(path).not.toMatch(/signature|expires|token/i);

    const document = await api.call('GET', path, { key: client.key });
    expect(expectSuccess(document)).toEqual({ order_id: orderId, result_id: resultId, content_type: 'application/pdf', content_base64: REPORT_PDF_BASE64 });
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

  it('the document route authorizes every use on the server: only the key it was issued to, unexpired, for that order and version', async () => {
    const { orderId, resultId } = await releasedVersion(true);
    const path: string = expectSuccess(await api.call('GET', reportPath(orderId, resultId), { key: client.key })).report.retrieval_path;
    const documentPath = new URL(path, 'http://x').pathname;

    // Issued by this server to this key, ten minutes ago.
    const caller = await callerOf(connection.sql, client.key);
    const old = await getReportAvailability(connection.db, caller, orderId, resultId, new Date(Date.now() - 10 * 60_000));
    expect(expectError(await api.call('GET', old.report.retrieval_path, { key: client.key }), 404, 'not_found').message).toMatch(/expired/);

    // The same client's second key, with every scope: the record belongs to the key that asked.
    expectError(await api.call('GET', path, { key: await tenant.key() }), 404, 'not_found');
    // The same client in production, and another client of the same laboratory.
    expectError(await api.call('GET', path, { key: await tenant.key({ environment: 'production' }) }), 404, 'not_found');
    const otherClient = await buildTenant(f, { laboratory: tenant.laboratory });
    expectError(await api.call('GET', path, { key: await otherClient.key() }), 404, 'not_found');
    // Without a record, with an unknown one, without a key.
    expectError(await api.call('GET', documentPath, { key: client.key }), 400, 'invalid_request');
    expectError(await api.call('GET', `${documentPath}?retrieval_id=00000000-0000-4000-8000-000000000000`, { key: client.key }), 404, 'not_found');
    expectError(await api.call('GET', path), 401, 'unauthorized');
    // The untouched path still works: nothing above consumed it.
    expectSuccess(await api.call('GET', path, { key: client.key }));
  });

  it('a revoked key loses its retrieval paths at once', async () => {
    const { orderId, resultId } = await releasedVersion(true);
    const key = await tenant.key();
    const path: string = expectSuccess(await api.call('GET', reportPath(orderId, resultId), { key })).report.retrieval_path;
    expectSuccess(await api.call('GET', path, { key }));
    await revokeKey(connection.db, (await callerOf(connection.sql, key)).keyId);
    expectError(await api.call('GET', path, { key }), 401, 'unauthorized');
  });

  it('a path issued for one version opens neither another version nor that version once it has been superseded', async () => {
    const { orderId, resultId } = await releasedVersion(true);
    const path: string = expectSuccess(await api.call('GET', reportPath(orderId, resultId), { key: client.key })).report.retrieval_path;
    const retrievalId = new URL(path, 'http://x').searchParams.get('retrieval_id');
    const corrected = await lab.recordResult({ order_id: orderId, source_result_id: 'LIS-R-2', performing_laboratory_system: 'LIS', observations: [{ a: '1' }], report: { content_type: 'text/plain', content_base64: 'aGk=' } });
    await lab.releaseResult({ result_id: corrected.result.result_id, as: 'corrected' });

    expectError(await api.call('GET', `/v1/orders/${orderId}/results/${corrected.result.result_id}/report/document?retrieval_id=${retrievalId}`, { key: client.key }), 404, 'not_found');
    expect(expectError(await api.call('GET', path, { key: client.key }), 404, 'not_found').message).toMatch(/superseded/);
    // The superseded version stays retrievable: asking again issues a record for it as it now stands.
    const again: string = expectSuccess(await api.call('GET', reportPath(orderId, resultId), { key: client.key })).report.retrieval_path;
    expect(expectSuccess(await api.call('GET', again, { key: client.key }))).toMatchObject({ result_id: resultId, content_base64: REPORT_PDF_BASE64 });
  });

  it('the tRPC door (results.report, results.reportDocument) applies the same authorization', async () => {
    const { orderId, resultId } = await releasedVersion(true);
    const trpc = (procedure: string, input: unknown, key?: string) =>
      api.fetch('GET', `/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    const issued = await trpc('results.report', { orderId, resultId }, client.key);
    expect(issued.status, issued.text).toBe(200);
    const path: string = issued.body.result.data.data.report.retrieval_path;
    expect(path).not.toMatch(/signature|expires|token/i);
    const input = { orderId, resultId, retrieval_id: new URL(path, 'http://x').searchParams.get('retrieval_id') };

    const document = await trpc('results.reportDocument', input, client.key);
    expect(document.status, document.text).toBe(200);
    expect(document.body.result.data.data).toEqual({ order_id: orderId, result_id: resultId, content_type: 'application/pdf', content_base64: REPORT_PDF_BASE64 });
    // A record issued on one door is the same record on the other.
    expectSuccess(await api.call('GET', path, { key: client.key }));

    const refused = async (key: string | undefined, status: number, code: string) => {
      const response = await trpc('results.reportDocument', input, key);
      expect(response.status, response.text).toBe(status);
      expect(response.body.error.data.partner.error.code).toBe(code);
    };
    await refused(await tenant.key(), 404, 'not_found');
    await refused(await (await buildTenant(f, { laboratory: tenant.laboratory })).key(), 404, 'not_found');
    await refused(await tenant.key({ revoked: true }), 401, 'unauthorized');
    await refused(undefined, 401, 'unauthorized');
    const caller = await callerOf(connection.sql, client.key);
    const expired = await getReportAvailability(connection.db, caller, orderId, resultId, new Date(Date.now() - 10 * 60_000));
    const expiredInput = { orderId, resultId, retrieval_id: new URL(expired.report.retrieval_path, 'http://x').searchParams.get('retrieval_id') };
    const late = await trpc('results.reportDocument', expiredInput, client.key);
    expect(late.status, late.text).toBe(404);
    expect(late.body.error.data.partner.error.message).toMatch(/expired/);
  });

  it('needs the results:read scope, on both routes', async () => {
    const { orderId, resultId } = await releasedVersion(true);
    const path: string = expectSuccess(await api.call('GET', reportPath(orderId, resultId), { key: client.key })).report.retrieval_path;
    const key = await tenant.key({ scopes: ['orders:read'] });
    expectError(await api.call('GET', reportPath(orderId, resultId), { key }), 403, 'forbidden');
    expectError(await api.call('GET', path, { key }), 403, 'forbidden');
  });
});
