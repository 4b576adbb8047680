import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { buildTenant, fixtures, testDatabaseUrl } from '@lop/testing';
import { killAllApiProcesses, startApiProcess } from '../testing/api-process';
import { connectFixtures } from '../testing/harness';

/**
 * docs/audit.md § The guarantee: a read is answered only once its audit record is committed. The
 * API as a real process, SIGKILLed while eight clients read an order as fast as they can: every
 * answer a client received has its record (by the request id the answer carried); a record
 * without an answer can only be one of the requests in flight at the kill (over-reporting, never
 * under-reporting); and requests sent after the kill, which no process handled, leave none.
 */
const connection = connectFixtures();
const f = fixtures(connection.db);

afterEach(() => killAllApiProcesses());
afterAll(() => connection.close());

describe('audit records across a crash of the API process', () => {
  it('SIGKILL under GET load: every answered read has its record, no record without a request that reached the process', { timeout: 90_000 }, async () => {
    const api = await startApiProcess(testDatabaseUrl());
    const tenant = await buildTenant(f);
    const key = await tenant.key();
    const subject = `audit-kill-${randomBytes(4).toString('hex')}`;
    expect((await api.call('PUT', `/v1/subjects/${subject}`, { key })).status).toBe(200);
    const created = await api.call('POST', '/v1/orders', {
      key,
      json: { external_order_id: `audit-kill-${randomBytes(4).toString('hex')}`, program_id: tenant.sandbox.program.id, item_id: tenant.sandbox.item.id, external_subject_id: subject, collection: 'in_person_draw' },
      headers: { 'idempotency-key': randomBytes(8).toString('hex') },
    });
    expect(created.status, created.text).toBe(201);
    const orderId: string = created.body.data.order_id;

    const answered: string[] = [];
    let unanswered = 0;
    const reader = async () => {
      for (;;) {
        try {
          const response = await api.call('GET', `/v1/orders/${orderId}`, { key });
          expect(response.status, response.text).toBe(200);
          expect(response.body.data.order_id).toBe(orderId);
          answered.push(response.headers.get('x-request-id')!);
        } catch (error) {
          // fetch fails with a TypeError once the process is gone (reset, refused); anything else is a finding.
          if (!(error instanceof TypeError)) throw error;
          unanswered++;
          return;
        }
      }
    };
    const readers = Array.from({ length: 8 }, reader);
    const deadline = Date.now() + 30_000;
    while (answered.length < 300 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    await api.kill('SIGKILL');
    await Promise.all(readers);
    expect(answered.length).toBeGreaterThanOrEqual(300);

    const records = async () =>
      (await connection.sql<{ request_id: string; status: number }[]>`select request_id, status from audit_records where client_id = ${tenant.clientId} and kind = 'read'`);
    const afterKill = await records();
    const recorded = new Set(afterKill.map((r) => r.request_id));
    // Every answer a client received has its record.
    expect(answered.filter((id) => !recorded.has(id))).toEqual([]);
    // Records without an answer: at most the requests that were in flight when the process died.
    const extra = afterKill.filter((r) => !answered.includes(r.request_id));
    expect(extra.length).toBeLessThanOrEqual(unanswered);
    expect(afterKill.every((r) => r.status === 200)).toBe(true);
    // One record per request.
    expect(recorded.size).toBe(afterKill.length);

    // Requests after the kill reach no process: they leave no record.
    for (let i = 0; i < 5; i++) await expect(api.call('GET', `/v1/orders/${orderId}`, { key })).rejects.toThrow(TypeError);
    expect((await records()).length).toBe(afterKill.length);
  });
});
