import { inArray } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxRequestLog } from '@lop/db';
import { grantPrograms, laboratoryCaller, revokeProgramGrants } from '@lop/domain';
import { eventually } from '@lop/testing';
import { type TestResponse } from '../testing/harness';
import { expectSuccess } from '../testing/expect-envelope';
import { REPORT_PDF_BASE64, orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/**
 * The side doors of a withdrawn program grant (issue 33): the order reads answer 404
 * (grants-revoked.test.ts), and so must everything else that speaks of the program's orders —
 * the request log's stored bodies (withheld, with the reason) and the event stream (no new
 * event, no sequence spent). Granting again restores the log's bodies and the stream goes on
 * densely, without replaying what happened meanwhile. Webhooks: apps/delivery-worker/src/revocation.test.ts.
 */
describe('a withdrawn program grant leaks through no side door', () => {
  const scene = useScene({ rateLimit: false, client: true });
  const { api, tenant, client, connection, fixtures: f } = scene;
  const lab = laboratoryCaller({ db: connection.db });
  let orderId: string;
  let resultId: string;
  let otherOrderId: string;
  /** request_ids of the logged requests about the revoked program's order, by what they did. */
  const about = new Map<string, string>();
  let otherRequest: string;
  let labRequest: string;

  const requestIdOf = (response: TestResponse) => response.headers.get('x-request-id')!;
  const trpc = (procedure: string, input: unknown) =>
    api.fetch('GET', `/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: { authorization: `Bearer ${client.key}` } });
  const logEntry = async (requestId: string) => {
    const response = await trpc('console.requestLogEntry', { request_id: requestId });
    expect(response.status, response.text).toBe(200);
    return response.body.result.data.data as { bodies_withheld: boolean; bodies_withheld_reason: string | null; request_body: unknown; response_body: unknown };
  };
  const allEvents = async () => {
    const page = expectSuccess(await client.events('?limit=500'));
    return page.events as { sequence: number; type: string; data: { order_id?: string } }[];
  };
  const revoke = () => revokeProgramGrants(connection.db, { clientId: tenant.clientId, environment: 'sandbox', programId: tenant.sandbox.program.id });
  const regrant = () => grantPrograms(connection.db, { clientId: tenant.clientId, environment: 'sandbox', programId: tenant.sandbox.program.id });

  beforeAll(async () => {
    const { subject } = scene;
    const created = await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject));
    orderId = expectSuccess(created, 201).order_id;
    about.set('POST order', requestIdOf(created));
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
    const reads: [string, string][] = [
      ['GET order', `/v1/orders/${orderId}`],
      ['GET results', `/v1/orders/${orderId}/results`],
      ['GET result', `/v1/orders/${orderId}/results/${resultId}`],
      ['GET result as FHIR', `/v1/orders/${orderId}/results/${resultId}/fhir`],
      ['GET report', `/v1/orders/${orderId}/results/${resultId}/report`],
    ];
    for (const [name, path] of reads) about.set(name, requestIdOf(await api.call('GET', path, { key: client.key })));
    const report = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results/${resultId}/report`, { key: client.key }));
    about.set('GET report document', requestIdOf(await api.call('GET', report.report.retrieval_path, { key: client.key })));

    const other = await f.program(tenant.laboratory.id, { environment: 'sandbox', serviceGeography: [tenant.region] });
    const otherItem = await f.item(other.id);
    await f.grant(tenant.clientId, other);
    const otherCreated = await client.create(orderBody(other, otherItem, subject));
    otherOrderId = expectSuccess(otherCreated, 201).order_id;
    otherRequest = requestIdOf(otherCreated);
    labRequest = requestIdOf(await api.call('GET', '/v1/lab', { key: client.key }));
    // The writer flushes about a second after a response: wait for every row, never a fixed time.
    const ids = [...about.values(), otherRequest, labRequest];
    await eventually(async () => expect((await connection.db.select().from(sandboxRequestLog).where(inArray(sandboxRequestLog.requestId, ids))).length).toBe(ids.length));
  });

  it('granted: the log shows the bodies of every request about the order, results as their shape (the order id kept, no observation value)', async () => {
    for (const [name, requestId] of about) {
      const entry = await logEntry(requestId);
      expect(entry, name).toMatchObject({ bodies_withheld: false, bodies_withheld_reason: null });
      expect(JSON.stringify(entry.response_body), name).toContain(orderId);
    }
    expect(JSON.stringify((await logEntry(about.get('GET result')!)).response_body)).not.toContain('"2.1"');
  });

  it('withdrawn: the log withholds the bodies of every request about the order, saying why; other entries are untouched', async () => {
    await revoke();
    try {
      for (const [name, requestId] of about) {
        expect(await logEntry(requestId), name).toMatchObject({ bodies_withheld: true, bodies_withheld_reason: 'order_not_readable', request_body: null, response_body: null });
      }
      expect(await logEntry(otherRequest)).toMatchObject({ bodies_withheld: false, bodies_withheld_reason: null });
      expect(JSON.stringify((await logEntry(otherRequest)).response_body)).toContain(otherOrderId);
      expect(await logEntry(labRequest)).toMatchObject({ bodies_withheld: false });
      // A narrow key is still told the first reason: the scope it lacks.
      const narrow = await tenant.key({ scopes: ['events:read'] });
      const narrowRead = await api.fetch('GET', `/api/trpc/console.requestLogEntry?input=${encodeURIComponent(JSON.stringify({ request_id: otherRequest }))}`, {
        headers: { authorization: `Bearer ${narrow}` },
      });
      expect(narrowRead.body.result.data.data).toMatchObject({ bodies_withheld: true, bodies_withheld_reason: 'missing_scope', response_body: null });
    } finally {
      await regrant();
    }
    // Nothing was deleted: granted again, the bodies are shown again.
    expect(await logEntry(about.get('GET result as FHIR')!)).toMatchObject({ bodies_withheld: false, bodies_withheld_reason: null });
  });

  it('withdrawn: laboratory work on the order emits nothing into the stream and spends no sequence; granted again, the stream goes on densely without replaying it', async () => {
    const before = await allEvents();
    const head = before.at(-1)!.sequence;
    expect(before.map((e) => e.sequence)).toEqual(before.map((_, i) => i + 1));

    await revoke();
    let corrected = '';
    try {
      const amended = await lab.recordResult({
        order_id: orderId,
        source_result_id: 'LIS-R-2',
        performing_laboratory_system: 'Sunquest LIS 8',
        observations: [{ analyte: 'TSH', value: '2.4', unit: 'mIU/L' }],
      });
      corrected = amended.result.result_id;
      const released = await lab.releaseResult({ result_id: corrected, as: 'corrected' });
      const flagged = await lab.flagCritical({ result_id: corrected });
      expect([...released.events, ...flagged.events]).toEqual([]);
      // Both doors: REST and the console's stream read the same rows.
      expect((await allEvents()).map((e) => e.sequence)).toEqual(before.map((e) => e.sequence));
      const head2 = await connection.sql<{ last: string }[]>`select last_sequence as last from event_streams where client_id = ${tenant.clientId} and environment = 'sandbox'`;
      expect(Number(head2[0].last)).toBe(head);
      // The other program's order still speaks.
      const otherAccepted = await lab.accept({ order_id: otherOrderId });
      expect(otherAccepted.events.map((e) => e.sequence)).toEqual(otherAccepted.events.map((_, i) => head + 1 + i));
    } finally {
      await regrant();
    }
    const afterRevoke = await allEvents();
    // Granted again: the next fact about the order is appended at the next sequence.
    const flagged = await lab.flagCritical({ result_id: resultId });
    expect(flagged.events.map((e) => e.type)).toEqual(['result.critical']);
    const after = await allEvents();
    expect(after.map((e) => e.sequence)).toEqual(after.map((_, i) => i + 1));
    expect(after.slice(afterRevoke.length).map((e) => e.type)).toEqual(['result.critical']);
    // None of the suppressed facts (the correction, its critical flag) is replayed by the re-grant.
    const ofOrder = after.filter((e) => e.data.order_id === orderId);
    expect(ofOrder.map((e) => e.type)).not.toContain('result.corrected');
    expect(ofOrder.filter((e) => (e.data as { result_id?: string }).result_id === corrected)).toEqual([]);
  });
});
