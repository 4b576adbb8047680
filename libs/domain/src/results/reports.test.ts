import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { Caller } from '../auth/authenticate';
import { recordResult } from '../laboratory-operations/result-recording';
import { releaseResult } from '../laboratory-operations/result-release';
import { driveTo, newOrder, openTestDatabase, resultBody } from '../laboratory-operations/test-support';
import type { OrderRow } from '../orders/order-resource';
import { DataProtector } from '../security/protector';
import { getReportAvailability, getReportDocument, REPORT_PATH_TTL_SECONDS } from './reports';

const connection = openTestDatabase();
const db = connection.db;
afterAll(() => connection.close());

const protector = new DataProtector(randomBytes(32));
const callerOf = (order: OrderRow, keyId = '11111111-1111-4111-8111-111111111111'): Caller => ({
  keyId,
  clientId: order.clientId,
  laboratoryId: order.laboratoryId,
  environment: order.environment,
  scopes: new Set(['results:read']),
});

async function releasedWithDocument() {
  const { order } = await newOrder(db);
  await driveTo(db, order.id, 'in_testing');
  const recorded = await recordResult(db, { ...resultBody({ report: { content_type: 'application/pdf', content_base64: 'JVBERi0xLjQK' } }), order_id: order.id });
  await releaseResult(db, { result_id: recorded.result.result_id, as: 'final' });
  return { order, resultId: recorded.result.result_id };
}

function queryOf(path: string) {
  const url = new URL(path, 'http://x');
  return { expires: url.searchParams.get('expires')!, signature: url.searchParams.get('signature')! };
}

describe('report retrieval paths', () => {
  it('expire five minutes after they were issued', async () => {
    const { order, resultId } = await releasedWithDocument();
    const issuedAt = new Date('2025-03-04T10:00:00Z');
    const availability = await getReportAvailability(db, callerOf(order), protector, order.id, resultId, issuedAt);
    const query = queryOf(availability.report.retrieval_path);
    expect(Number(query.expires)).toBe(issuedAt.getTime() / 1000 + REPORT_PATH_TTL_SECONDS);
    const input = { orderId: order.id, resultId, ...query };

    const justBefore = new Date(issuedAt.getTime() + (REPORT_PATH_TTL_SECONDS - 1) * 1000);
    await expect(getReportDocument(db, callerOf(order), protector, input, justBefore)).resolves.toMatchObject({ content_type: 'application/pdf', content_base64: 'JVBERi0xLjQK' });
    const atExpiry = new Date(issuedAt.getTime() + REPORT_PATH_TTL_SECONDS * 1000);
    await expect(getReportDocument(db, callerOf(order), protector, input, atExpiry)).rejects.toMatchObject({ errorCode: 'not_found', message: expect.stringMatching(/expired/) });
  });

  it('are bound to the key, the order, the result and the expiry they were signed for', async () => {
    const { order, resultId } = await releasedWithDocument();
    const now = new Date();
    const path = (await getReportAvailability(db, callerOf(order), protector, order.id, resultId, now)).report.retrieval_path;
    const query = queryOf(path);
    const other = await releasedWithDocument();
    const refusals = [
      { caller: callerOf(order, '22222222-2222-4222-8222-222222222222'), input: { orderId: order.id, resultId, ...query } },
      { caller: callerOf(order), input: { orderId: order.id, resultId, ...query, expires: String(Number(query.expires) + 60) } },
      { caller: callerOf(order), input: { orderId: order.id, resultId, ...query, signature: query.signature.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) } },
      { caller: callerOf(other.order), input: { orderId: other.order.id, resultId: other.resultId, ...query } },
      { caller: callerOf(order), input: { orderId: order.id, resultId, ...query, expires: `0${query.expires}` } },
    ];
    for (const { caller, input } of refusals) {
      await expect(getReportDocument(db, caller, protector, input, now)).rejects.toMatchObject({ errorCode: 'not_found' });
    }
    // A different server secret does not accept it either.
    await expect(getReportDocument(db, callerOf(order), new DataProtector(randomBytes(32)), { orderId: order.id, resultId, ...query }, now)).rejects.toMatchObject({ errorCode: 'not_found' });
  });
});
