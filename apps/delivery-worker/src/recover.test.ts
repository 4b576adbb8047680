import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { webhookDeliveries } from '@lop/db';
import { appendEvents, createCallerFactory, partnerRouter, ReadAuditWriter, StreamWriteGate, type EventDraft, type RequestContext } from '@lop/domain';
import { eventually, newPartner, type Partner, subscribe, testProtector } from '@lop/testing';
import { useDeliveryRig } from './testing/rig';

/**
 * Recover against an endpoint that answers 410 to everything, with a real worker delivering the
 * replays (which dead-letter at once): each event reaches the receiver at most once per completed
 * recover call, however many dead letters it has and however the calls overlap.
 */

const EVENTS = 6;

const rig = useDeliveryRig('recover', { poolMax: 8, reply: () => ({ status: 410 }) });
const { database } = rig;

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

    // Two calls, each after the last one's replays dead-lettered: EVENTS replays each, not 6, 12, 24…
    for (let call = 1; call <= 2; call++) {
      const result = (await recover()).data;
      expect(result).toMatchObject({ replayed: EVENTS, remaining: 0 });
      expected += EVENTS;
      await settledDeliveries(subscription.subscription_id, expected);
      expect([...perEvent().values()]).toEqual(Array(EVENTS).fill(1 + call));
    }

    // Five at once (a batch, several tabs): one set of replays per completed call at most.
    const calls = await Promise.allSettled(Array.from({ length: 5 }, recover));
    const completed = calls.filter((c) => c.status === 'fulfilled');
    const replayed = completed.reduce((sum, c) => sum + c.value.data.replayed, 0);
    for (const c of calls) if (c.status === 'rejected') expect(c.reason).toMatchObject({ code: 'CONFLICT', details: [{ issue: 'recovery_in_progress' }] });
    expect(replayed).toBeGreaterThanOrEqual(EVENTS);
    expect(replayed).toBeLessThanOrEqual(EVENTS * completed.length);
    await settledDeliveries(subscription.subscription_id, expected + replayed);
    const counts = perEvent();
    expect([...counts.keys()].sort()).toEqual([...eventIds].sort());
    for (const n of counts.values()) expect(n - 3).toBeLessThanOrEqual(completed.length);
    expect(rig.receiver.requests.filter((q) => q.path === path)).toHaveLength(3 * EVENTS + replayed);
  }, 120_000);
});
