import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { killAllApiProcesses, startApiProcess } from '../testing/api-process';
import { connectFixtures } from '../testing/harness';
import { buildTenant, fixtures, type Tenant, testDatabaseUrl } from '@lop/testing';

/**
 * The API as a real process, stopped abruptly (SIGKILL) or politely (SIGTERM) while orders are
 * being created: an order and its order.created event commit together or not at all, every 201
 * is in the database, and a polite stop lets in-flight requests finish.
 */
const connection = connectFixtures();
const f = fixtures(connection.db);

afterEach(() => killAllApiProcesses());
afterAll(() => connection.close());

async function newTenant(api: { call: (m: string, p: string, o?: any) => Promise<{ status: number }> }): Promise<{ tenant: Tenant; key: string; subject: string }> {
  const tenant = await buildTenant(f);
  const key = await tenant.key();
  const subject = `crash-${randomBytes(4).toString('hex')}`;
  expect((await api.call('PUT', `/v1/subjects/${subject}`, { key })).status).toBe(200);
  return { tenant, key, subject };
}

const orderBody = (tenant: Tenant, subject: string, externalOrderId: string) => ({
  external_order_id: externalOrderId,
  program_id: tenant.sandbox.program.id,
  item_id: tenant.sandbox.item.id,
  external_subject_id: subject,
  collection: 'in_person_draw',
});

/** Orders and order.created events of a client that do not come in pairs (must be none), and the stream's density. */
async function integrityOf(clientId: string) {
  const [row] = await connection.sql<{ orphan_orders: number; orphan_events: number; events: number; max_sequence: number | null; distinct_sequences: number }[]>`
    select
      (select count(*)::int from orders o where o.client_id = ${clientId}
         and (select count(*) from events e where e.order_id = o.id and e.type = 'order.created') <> 1) as orphan_orders,
      (select count(*)::int from events e where e.client_id = ${clientId} and e.type = 'order.created'
         and not exists (select 1 from orders o where o.id = e.order_id)) as orphan_events,
      (select count(*)::int from events where client_id = ${clientId}) as events,
      (select max(sequence)::int from events where client_id = ${clientId}) as max_sequence,
      (select count(distinct sequence)::int from events where client_id = ${clientId}) as distinct_sequences`;
  return row;
}

describe('API process crashes and stops', () => {
  it('SIGKILL during concurrent creates: every 201 is stored, no order without its order.created event or the reverse, a retry never duplicates', { timeout: 90_000 }, async () => {
    const api = await startApiProcess(testDatabaseUrl());
    const { tenant, key, subject } = await newTenant(api);
    const acknowledged: { orderId: string; externalOrderId: string }[] = [];
    const unanswered: { idempotencyKey: string; externalOrderId: string }[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop && i < 500; i++) {
        const externalOrderId = `kill-${w}-${i}-${randomBytes(3).toString('hex')}`;
        const idempotencyKey = `idem-${externalOrderId}`;
        try {
          const response = await api.call('POST', '/v1/orders', { key, json: orderBody(tenant, subject, externalOrderId), headers: { 'idempotency-key': idempotencyKey } });
          if (response.status === 201) acknowledged.push({ orderId: response.body.data.order_id, externalOrderId });
          else throw new Error(`unexpected ${response.status}: ${response.text}`);
        } catch (error) {
          // fetch fails with a TypeError once the process is gone (reset, refused); anything else is a finding.
          if (!(error instanceof TypeError)) throw error;
          unanswered.push({ idempotencyKey, externalOrderId });
          return;
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    // Kill once a fair number of orders went through, so some transactions are surely in flight.
    const deadline = Date.now() + 20_000;
    while (acknowledged.length < 40 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await api.kill('SIGKILL');
    await Promise.all(writers);
    stop = true;
    expect(acknowledged.length).toBeGreaterThanOrEqual(40);

    // Every acknowledged order is there.
    const stored = await connection.sql<{ id: string }[]>`select id from orders where id = any(${acknowledged.map((a) => a.orderId)}::uuid[])`;
    expect(stored).toHaveLength(acknowledged.length);
    // Nothing half-written; the stream stays dense.
    const integrity = await integrityOf(tenant.clientId);
    expect(integrity.orphan_orders).toBe(0);
    expect(integrity.orphan_events).toBe(0);
    expect(integrity.distinct_sequences).toBe(integrity.events);
    expect(integrity.max_sequence).toBe(integrity.events);

    // The requests the crash left unanswered, retried against a new process with the same key and
    // body: a replay, a new order, or "still in flight" (the dead process's lease), never a second order.
    const restarted = await startApiProcess(testDatabaseUrl());
    for (const lost of unanswered) {
      const response = await restarted.call('POST', '/v1/orders', { key, json: orderBody(tenant, subject, lost.externalOrderId), headers: { 'idempotency-key': lost.idempotencyKey } });
      expect([201, 409], response.text).toContain(response.status);
      if (response.status === 409) expect(response.body.error.details[0].issue).toBe('idempotency_key_in_flight');
    }
    const perExternalId = await connection.sql<{ n: number }[]>`
      select count(*)::int as n from orders where client_id = ${tenant.clientId} group by external_order_id having count(*) > 1`;
    expect(perExternalId).toHaveLength(0);
    await restarted.kill('SIGTERM');
  });

  it('SIGTERM: requests in flight finish with 201, new connections are refused, and the process exits 0', { timeout: 90_000 }, async () => {
    // Six creates of one client inside their transactions at once, held on the stream row for seconds:
    // beyond the default write gate (4) and lock_timeout (0.5 s), which this test is not about.
    const api = await startApiProcess(testDatabaseUrl(), { PARTNER_DB_POOL_SIZE: '10', PARTNER_CLIENT_WRITE_CONCURRENCY: '10', PARTNER_DB_LOCK_TIMEOUT_SECONDS: '60' });
    const { tenant, key, subject } = await newTenant(api);
    // One order first, so the client's stream counter row exists; then hold its lock so creates wait inside their transactions.
    const first = await api.call('POST', '/v1/orders', { key, json: orderBody(tenant, subject, `term-first-${randomBytes(3).toString('hex')}`), headers: { 'idempotency-key': randomBytes(8).toString('hex') } });
    expect(first.status).toBe(201);
    const holder = await connection.sql.reserve();
    try {
      await holder`begin`;
      await holder`select last_sequence from event_streams where client_id = ${tenant.clientId} for update`;
      const IN_FLIGHT = 6;
      const externalIds = Array.from({ length: IN_FLIGHT }, (_, i) => `term-${i}-${randomBytes(3).toString('hex')}`);
      const requests = externalIds.map((externalOrderId) =>
        api.call('POST', '/v1/orders', { key, json: orderBody(tenant, subject, externalOrderId), headers: { 'idempotency-key': `idem-${externalOrderId}` } }),
      );
      // Wait until all of them are blocked on the stream lock, i.e. truly in flight.
      const deadline = Date.now() + 15_000;
      for (;;) {
        const [{ waiting }] = await connection.sql<{ waiting: number }[]>`
          select count(*)::int as waiting from pg_stat_activity
          where datname = current_database() and application_name = 'partner-api' and wait_event_type = 'Lock'`;
        if (waiting >= IN_FLIGHT) break;
        if (Date.now() > deadline) throw new Error(`only ${waiting} creates reached the lock`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      api.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(api.child.exitCode).toBeNull();
      // Stopped accepting: a new connection is refused while the old ones finish.
      await expect(fetch(`${api.url}/livez`)).rejects.toThrow();
      await holder`commit`;
      const responses = await Promise.all(requests);
      expect(responses.map((r) => r.status)).toEqual(externalIds.map(() => 201));
      const exit = await Promise.race([api.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 20_000))]);
      expect(exit).toEqual({ code: 0, signal: null });
      const stored = await connection.sql`select 1 from orders where client_id = ${tenant.clientId} and external_order_id = any(${externalIds})`;
      expect(stored).toHaveLength(IN_FLIGHT);
    } finally {
      await holder`rollback`.catch(() => undefined);
      holder.release();
    }
  });
});
