import { describe, expect, it } from 'vitest';
import { laboratoryCaller } from '@lop/domain';
import { expectSuccess } from '../testing/expect-envelope';
import { orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/** What the spec says occurred_at is: "when the underlying fact happened" — on both doors. */
describe('event occurred_at on the stream: the time of the fact, not of its recording', () => {
  const scene = useScene({ observed: true, client: true });
  const { api, tenant, client, connection } = scene;
  const lab = laboratoryCaller({ db: connection.db });

  const trpcEvents = async (cursor?: string) => {
    const input = cursor ? { cursor, limit: 500 } : { limit: 500 };
    const response = await api.fetch('GET', `/api/trpc/events.list?input=${encodeURIComponent(JSON.stringify(input))}`, { headers: { authorization: `Bearer ${client.key}` } });
    expect(response.status, response.text).toBe(200);
    return response.body.result.data.data;
  };

  it('a collection the laboratory reports as earlier: specimen.updated and order.updated occur at collected_at, on REST and tRPC, ordered by sequence', async () => {
    const start = expectSuccess(await client.events('?limit=500'));
    const created = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject)), 201);
    const orderId: string = created.order_id;
    await lab.accept({ order_id: orderId });
    const collected = await lab.collect({ order_id: orderId, collected_at: '2026-11-20T08:00:00Z' });
    expect(collected.specimen.collected_at).toBe('2026-11-20T08:00:00.000Z');
    const received = await lab.receive({ order_id: orderId, received_at: '2026-11-20T09:15:00Z' });

    const rest = expectSuccess(await client.events(`?cursor=${encodeURIComponent(start.next_cursor)}&limit=500`)).events.filter((e: any) => e.data.order_id === orderId);
    const overTrpc = (await trpcEvents(start.next_cursor)).events.filter((e: any) => e.data.order_id === orderId);
    expect(overTrpc).toEqual(rest);

    const byId = new Map(rest.map((e: any) => [e.event_id, e]));
    const collection = collected.events.map((e) => byId.get(e.event_id) as any);
    expect(collection.map((e) => e.type)).toEqual(expect.arrayContaining(['specimen.updated', 'order.updated']));
    for (const event of collection) expect(event.occurred_at, event.type).toBe('2026-11-20T08:00:00.000Z');
    for (const event of received.events.map((e) => byId.get(e.event_id) as any)) expect(event.occurred_at, event.type).toBe('2026-11-20T09:15:00.000Z');

    // order.created occurred now, the collection days before: occurred_at goes backwards along the stream, sequence never does.
    expect(rest[0]).toMatchObject({ type: 'order.created' });
    const sequences = rest.map((e: any) => e.sequence);
    expect([...sequences].sort((a, b) => a - b)).toEqual(sequences);
    const times = rest.map((e: any) => Date.parse(e.occurred_at));
    expect(times.some((time: number, i: number) => i > 0 && time < times[i - 1])).toBe(true);
  });
});
