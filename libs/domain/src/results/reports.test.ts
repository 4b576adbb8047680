import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { reportRetrievals, type Environment } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { createKey } from '../control-plane/control-plane';
import { recordResult } from '../laboratory-operations/result-recording';
import { releaseResult } from '../laboratory-operations/result-release';
import { driveTo, newOrder, openTestDatabase, resultBody } from '../../testing/orders';
import type { OrderRow } from '../orders/order-resource';
import { getReportAvailability, getReportDocument, REPORT_PATH_TTL_SECONDS, REPORT_RETRIEVAL_RETENTION_SECONDS } from './reports';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

/** A Caller of a real key of the order's client (the retrieval record refers to the key row). */
async function callerOf(order: Pick<OrderRow, 'clientId' | 'laboratoryId'>, environment: Environment = 'sandbox'): Promise<Caller> {
  const key = await createKey(db, { clientId: order.clientId, environment, scopes: ['results:read'] });
  return { keyId: key.key_id, clientId: order.clientId, laboratoryId: order.laboratoryId, environment, keyPrefix: 'lop_test_0000', scopes: new Set(['results:read']) };
}

async function releasedWithDocument() {
  const { order } = await newOrder(db);
  await driveTo(db, order.id, 'in_testing');
  const recorded = await recordResult(db, { ...resultBody({ report: { content_type: 'application/pdf', content_base64: 'JVBERi0xLjQK' } }), order_id: order.id });
  await releaseResult(db, { result_id: recorded.result.result_id, as: 'final' });
  return { order, resultId: recorded.result.result_id };
}

const retrievalIdOf = (path: string) => new URL(path, 'http://x').searchParams.get('retrieval_id')!;
const seconds = (at: Date, n: number) => new Date(at.getTime() + n * 1000);

describe('report retrieval paths', () => {
  it('name a server-side retrieval record and carry no signature, expiry or token', async () => {
    const { order, resultId } = await releasedWithDocument();
    const caller = await callerOf(order);
    const issuedAt = new Date();
    const { retrieval_path: path } = (await getReportAvailability(db, caller, order.id, resultId, issuedAt)).report;

    expect(path).toMatch(new RegExp(`^/v1/orders/${order.id}/results/${resultId}/report/document\\?retrieval_id=[0-9a-f-]{36}$`));
    expect(path).not.toMatch(/signature|expires|token/i);
    const [record] = await db.select().from(reportRetrievals).where(eq(reportRetrievals.id, retrievalIdOf(path)));
    expect(record).toMatchObject({
      keyId: caller.keyId,
      clientId: order.clientId,
      laboratoryId: order.laboratoryId,
      environment: 'sandbox',
      programId: order.programId,
      orderId: order.id,
      resultId,
      supersededByResultId: null,
      issuedAt,
      expiresAt: seconds(issuedAt, REPORT_PATH_TTL_SECONDS),
    });
  });

  it('expire five minutes after they were issued: the record, not the path, says so', async () => {
    const { order, resultId } = await releasedWithDocument();
    const caller = await callerOf(order);
    const issuedAt = new Date();
    const path = (await getReportAvailability(db, caller, order.id, resultId, issuedAt)).report.retrieval_path;
    const input = { orderId: order.id, resultId, retrieval_id: retrievalIdOf(path) };

    await expect(getReportDocument(db, caller, input, seconds(issuedAt, REPORT_PATH_TTL_SECONDS - 1))).resolves.toMatchObject({ content_type: 'application/pdf', content_base64: 'JVBERi0xLjQK' });
    await expect(getReportDocument(db, caller, input, seconds(issuedAt, REPORT_PATH_TTL_SECONDS))).rejects.toMatchObject({ errorCode: 'not_found', message: expect.stringMatching(/expired/) });
  });

  it('are authorized against the key, client, environment, order and result they were issued for', async () => {
    const { order, resultId } = await releasedWithDocument();
    const caller = await callerOf(order);
    const retrieval_id = retrievalIdOf((await getReportAvailability(db, caller, order.id, resultId)).report.retrieval_path);
    const input = { orderId: order.id, resultId, retrieval_id };
    const other = await releasedWithDocument();
    const refusals: [string, Caller, typeof input][] = [
      ['another key of the same client', await callerOf(order), input],
      ['the same client in production', await callerOf(order, 'production'), input],
      ['another client', await callerOf(other.order), { orderId: other.order.id, resultId: other.resultId, retrieval_id }],
      ['another order of the caller', caller, { ...input, orderId: other.order.id }],
      ['another result', caller, { ...input, resultId: other.resultId }],
      ['an unknown record', caller, { ...input, retrieval_id: '00000000-0000-4000-8000-000000000000' }],
    ];
    for (const [why, who, attempt] of refusals) {
      await expect(getReportDocument(db, who, attempt), why).rejects.toMatchObject({ errorCode: 'not_found' });
    }
    // Nothing above consumed the record.
    await expect(getReportDocument(db, caller, input)).resolves.toMatchObject({ result_id: resultId });
  });

  it('a version superseded after issue voids the record; asking again authorizes the superseded version, which stays retrievable', async () => {
    const { order, resultId } = await releasedWithDocument();
    const caller = await callerOf(order);
    const before = retrievalIdOf((await getReportAvailability(db, caller, order.id, resultId)).report.retrieval_path);
    const correction = await recordResult(db, { ...resultBody({ report: { content_type: 'text/plain', content_base64: 'aGk=' } }), order_id: order.id });
    await releaseResult(db, { result_id: correction.result.result_id, as: 'corrected' });

    await expect(getReportDocument(db, caller, { orderId: order.id, resultId, retrieval_id: before })).rejects.toMatchObject({
      errorCode: 'not_found',
      message: expect.stringMatching(/superseded/),
    });
    const after = retrievalIdOf((await getReportAvailability(db, caller, order.id, resultId)).report.retrieval_path);
    await expect(getReportDocument(db, caller, { orderId: order.id, resultId, retrieval_id: after })).resolves.toMatchObject({ result_id: resultId, content_type: 'application/pdf' });
  });

  it('repeated calls for the same key and version answer the live record: one row, until less than half its life is left; another key gets its own', async () => {
    const { order, resultId } = await releasedWithDocument();
    const caller = await callerOf(order);
    const now = new Date();
    const issue = async (who: Caller, at: Date) => retrievalIdOf((await getReportAvailability(db, who, order.id, resultId, at)).report.retrieval_path);
    const rows = async () => (await db.select({ id: reportRetrievals.id }).from(reportRetrievals).where(eq(reportRetrievals.resultId, resultId))).length;

    const first = await issue(caller, now);
    for (let i = 0; i < 20; i++) expect(await issue(caller, now)).toBe(first);
    // Half the TTL left exactly is not enough: the boundary issues a new record, one second before it does not.
    expect(await issue(caller, seconds(now, REPORT_PATH_TTL_SECONDS / 2 - 1))).toBe(first);
    const second = await issue(caller, seconds(now, REPORT_PATH_TTL_SECONDS / 2));
    expect(second).not.toBe(first);
    expect(await rows()).toBe(2);
    const otherKey = await issue(await callerOf(order), now);
    expect([first, second]).not.toContain(otherKey);
    expect(await rows()).toBe(3);
  });

  it('issuing prunes records expired longer than the retention, and keeps the recently expired ones', async () => {
    const { order, resultId } = await releasedWithDocument();
    const caller = await callerOf(order);
    const now = new Date();
    const issue = async (at: Date) => retrievalIdOf((await getReportAvailability(db, caller, order.id, resultId, at)).report.retrieval_path);
    const longExpired = await issue(seconds(now, -(REPORT_PATH_TTL_SECONDS + REPORT_RETRIEVAL_RETENTION_SECONDS + 60)));
    const recentlyExpired = await issue(seconds(now, -(REPORT_PATH_TTL_SECONDS + 60)));

    await issue(now);
    const remaining = new Set((await db.select({ id: reportRetrievals.id }).from(reportRetrievals).where(eq(reportRetrievals.resultId, resultId))).map((r) => r.id));
    expect(remaining.has(longExpired)).toBe(false);
    expect(remaining.has(recentlyExpired)).toBe(true);
    await expect(getReportDocument(db, caller, { orderId: order.id, resultId, retrieval_id: recentlyExpired })).rejects.toMatchObject({ message: expect.stringMatching(/expired/) });
  });
});
