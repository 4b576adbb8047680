import { randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { webhookDeliveries } from '@lop/db';
import { appendEvents, createCallerFactory, partnerRouter, ReadAuditWriter, RECOVER_SETTLE_SECONDS, StreamWriteGate, type EventDraft, type RequestContext } from '@lop/domain';
import { eventually, newPartner, type Partner, subscribe, testProtector, workerConfig } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

/**
 * Recover against an endpoint that answers 410 to everything, with a real worker delivering the
 * replays (which dead-letter at once): each event reaches the receiver at most once per completed
 * recover call, however many dead letters it has and however the calls overlap; and while a
 * replay is pending or in flight, or was made moments ago, no call replays its event again (issue 35).
 */

const EVENTS = 6;

// Attempts wait up to the spec's 10 s for an answer: the held endpoint below keeps replays in flight
// on purpose (one that times out is retried, so it stays pending: skipped all the same).
const rig = useDeliveryRig('recover', { poolMax: 8, reply: () => ({ status: 410 }), worker: () => ({ config: workerConfig({ PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '10' }) }) });
const { database } = rig;

/**
 * A real endpoint on 127.0.0.1 that answers 410 to everything; while held, it answers nothing
 * until released, so the attempts it receives stay in flight as long as the test needs.
 */
async function startGoneEndpoint() {
  const requests: { eventId: string }[] = [];
  const waiting: ServerResponse[] = [];
  let holding = false;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push({ eventId: String(req.headers['x-partner-event-id']) });
      if (holding) waiting.push(res);
      else res.writeHead(410).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/gone`,
    requests,
    held: () => waiting.length,
    hold: () => void (holding = true),
    release: () => {
      holding = false;
      for (const res of waiting.splice(0)) res.writeHead(410).end();
    },
    close: () => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections())),
  };
}

function consoleOf(partner: Partner) {
  const ctx: RequestContext = {
    door: 'console',
    spendRateLimit: async () => undefined,
    writeGate: new StreamWriteGate({ concurrency: 2 }),
    db: database.db,
    sql: database.sql,
    requestId: 'req_recover_test',
    authorization: `Bearer ${partner.key}`,
    headers: {},
    protector: testProtector(),
    audit: new ReadAuditWriter(database.sql),
    identified: {},
    response: { headers: {} },
  };
  return createCallerFactory(partnerRouter)(ctx).console.webhooks;
}

async function settledDeliveries(subscriptionId: string, count: number) {
  return eventually(async () => {
    const rows = await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscriptionId));
    expect(rows).toHaveLength(count);
    expect(rows.every((r) => r.state === 'dead_lettered')).toBe(true);
    return rows;
  }, 30_000);
}

/**
 * As if RECOVER_SETTLE_SECONDS had passed since the endpoint's last recover: its deliveries' times
 * moved back together (a replay's created_at is the recovered_at of the dead letters it took over).
 */
async function settleRecoveries(subscriptionId: string) {
  await database.sql`
    update webhook_deliveries set recovered_at = recovered_at - make_interval(secs => ${RECOVER_SETTLE_SECONDS + 1}),
      created_at = created_at - make_interval(secs => ${RECOVER_SETTLE_SECONDS + 1})
    where subscription_id = ${subscriptionId}`;
}

describe('recover on an endpoint that always answers 410', () => {
  it('twice, then five times concurrently: each event reaches the receiver at most once per completed call, never doubling', async () => {
    const partner = await newPartner(database.db, database.sql);
    const path = `/gone/${partner.clientId}`;
    const subscription = await subscribe(database.db, partner, rig.receiver.url(path), ['order.updated']);
    const drafts: EventDraft[] = Array.from({ length: EVENTS }, () => ({
      type: 'order.updated',
      occurredAt: new Date(),
      programId: partner.programId,
      data: { order_id: randomUUID(), external_order_id: 'gone', program_id: partner.programId, client_id: partner.clientId, environment: 'sandbox', lifecycle: 'active' },
    }));
    const eventIds = (await database.db.transaction((tx) => appendEvents(tx, { clientId: partner.clientId, environment: 'sandbox' }, drafts))).map((e) => e.event_id);
    let expected = EVENTS;
    await settledDeliveries(subscription.subscription_id, expected);
    const api = consoleOf(partner);
    const recover = () => api.recover({ subscription_id: subscription.subscription_id, since: new Date(0).toISOString() });
    const perEvent = () => {
      const counts = new Map<string, number>();
      for (const r of rig.receiver.requests.filter((q) => q.path === path)) counts.set(String(r.headers['x-partner-event-id']), (counts.get(String(r.headers['x-partner-event-id'])) ?? 0) + 1);
      return counts;
    };

    // Two calls, each after the last one's replays dead-lettered and settled: EVENTS replays each, not 6, 12, 24…
    for (let call = 1; call <= 2; call++) {
      const result = (await recover()).data;
      expect(result).toMatchObject({ replayed: EVENTS, remaining: 0 });
      expected += EVENTS;
      await settledDeliveries(subscription.subscription_id, expected);
      expect([...perEvent().values()]).toEqual(Array(EVENTS).fill(1 + call));
      // Their replays died within moments: a call now leaves them alone...
      expect((await recover()).data).toMatchObject({ replayed: 0, recently_recovered: EVENTS });
      // ...until RECOVER_SETTLE_SECONDS have passed.
      await settleRecoveries(subscription.subscription_id);
    }

    // Five at once (a batch, several tabs): one set of replays.
    const calls = await Promise.allSettled(Array.from({ length: 5 }, recover));
    const replayed = calls.reduce((sum, c) => sum + (c.status === 'fulfilled' ? c.value.data.replayed : 0), 0);
    for (const c of calls) if (c.status === 'rejected') expect(c.reason).toMatchObject({ code: 'CONFLICT', details: [{ issue: 'recovery_in_progress' }] });
    expect(replayed).toBe(EVENTS);
    await settledDeliveries(subscription.subscription_id, expected + replayed);
    expect([...perEvent().keys()].sort()).toEqual([...eventIds].sort());
    expect([...perEvent().values()]).toEqual(Array(EVENTS).fill(4));
    expect(rig.receiver.requests.filter((q) => q.path === path)).toHaveLength(4 * EVENTS);
  }, 120_000);

  it('while its replays are pending or in flight, five calls a few hundred ms apart and then five at once replay each event once; once they died and settled, the next call replays again', async () => {
    const gone = await startGoneEndpoint();
    try {
      const partner = await newPartner(database.db, database.sql);
      const subscription = await subscribe(database.db, partner, gone.url, ['order.updated']);
      const drafts: EventDraft[] = Array.from({ length: EVENTS }, () => ({
        type: 'order.updated',
        occurredAt: new Date(),
        programId: partner.programId,
        data: { order_id: randomUUID(), external_order_id: 'gone-held', program_id: partner.programId, client_id: partner.clientId, environment: 'sandbox', lifecycle: 'active' },
      }));
      const eventIds = (await database.db.transaction((tx) => appendEvents(tx, { clientId: partner.clientId, environment: 'sandbox' }, drafts))).map((e) => e.event_id);
      await settledDeliveries(subscription.subscription_id, EVENTS);
      const api = consoleOf(partner);
      const recover = () => api.recover({ subscription_id: subscription.subscription_id, since: new Date(0).toISOString() });
      const replaysOfEndpoint = async () =>
        (await database.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscription.subscription_id))).filter((d) => d.kind === 'replay');

      // The endpoint stops answering: replays reach it and stay in flight (or wait their turn, pending).
      gone.hold();
      const sequential: number[] = [];
      for (let call = 0; call < 5; call++) {
        if (call > 0) await new Promise((resolve) => setTimeout(resolve, 300));
        sequential.push((await recover()).data.replayed);
      }
      expect(sequential).toEqual([EVENTS, 0, 0, 0, 0]);
      // At least one replay is in flight now (sent, unanswered), not only pending.
      await eventually(async () => expect(gone.held()).toBeGreaterThan(0), 15_000);
      const together = await Promise.allSettled(Array.from({ length: 5 }, recover));
      for (const c of together) {
        if (c.status === 'fulfilled') expect(c.value.data.replayed).toBe(0);
        else expect(c.reason).toMatchObject({ code: 'CONFLICT', details: [{ issue: 'recovery_in_progress' }] });
      }
      const replays = await replaysOfEndpoint();
      expect(replays.map((r) => r.eventId).sort()).toEqual([...eventIds].sort());

      // The endpoint answers again (410): every replay dies, a dead letter of its own.
      gone.release();
      await settledDeliveries(subscription.subscription_id, 2 * EVENTS);
      expect(new Set(gone.requests.map((r) => r.eventId))).toEqual(new Set(eventIds));

      // A replay that died is replayable again (docs/webhooks.md), once its recover has settled: the next call replays each event once more.
      expect((await recover()).data).toMatchObject({ replayed: 0, recently_recovered: EVENTS });
      await settleRecoveries(subscription.subscription_id);
      expect((await recover()).data.replayed).toBe(EVENTS);
      await settledDeliveries(subscription.subscription_id, 3 * EVENTS);
      expect((await replaysOfEndpoint()).length).toBe(2 * EVENTS);
    } finally {
      gone.release();
      await gone.close();
    }
  }, 120_000);
});
