import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { apiClients, detachPartitionsBefore, laboratories } from '@lop/db';
import { ownTestDatabase } from '../../testing/orders';
import type { Caller } from '../auth/authenticate';
import { DataProtector } from '../security/protector';
import type { Stream } from './append';
import { ensureEventPartitions } from './partitions';
import { encodeScopeCursor, orderEventsScope, readEventPage, readEvents, streamScope, type EventScope } from './stream';

/**
 * The one cursor-paged read of events (readEventPage) with a narrowed scope: one order's events
 * within its stream. On a database of this file's own: it detaches partitions.
 *
 * Decided: an order scope's cursors are bound to the order, so the whole stream's cursor (and
 * another order's) is refused there, and the order's cursor by the stream; a cursor always
 * continues the list that issued it (stream.ts orderEventsScope).
 */
const connection = ownTestDatabase('event-scope', { max: 2 });

const protector = new DataProtector(randomBytes(32));
const utc = (iso: string) => new Date(`${iso}T00:00:00Z`);

async function newStream(): Promise<Stream> {
  const [lab] = await connection.db.insert(laboratories).values({ displayName: `Lab ${randomBytes(3).toString('hex')}`, legalName: 'Lab, Inc.', operatingName: 'Lab' }).returning();
  const [client] = await connection.db.insert(apiClients).values({ laboratoryId: lab.id, name: `Client ${randomBytes(3).toString('hex')}` }).returning();
  return { clientId: client.id, environment: 'sandbox' };
}

/** The stream's next events, one per entry of `orders` (null: an event of no order), an hour apart from `from`. */
async function writeEvents(stream: Stream, after: number, orders: (string | null)[], from: Date): Promise<void> {
  for (const [i, orderId] of orders.entries()) {
    const sequence = after + i + 1;
    const id = randomUUID();
    const at = new Date(from.getTime() + i * 3_600_000).toISOString();
    await connection.sql`
      insert into events (id, client_id, environment, sequence, type, version, occurred_at, order_id, data, body, created_at)
      values (${id}, ${stream.clientId}, 'sandbox', ${sequence}, 'order.updated', 1, ${at}, ${orderId}, '{}'::jsonb,
              ${JSON.stringify({ event_id: id, sequence })}, ${at})`;
  }
  await connection.sql`
    insert into event_streams (client_id, environment, last_sequence) values (${stream.clientId}, 'sandbox', ${after + orders.length})
    on conflict (client_id, environment) do update set last_sequence = excluded.last_sequence`;
}

async function readAll(scope: EventScope, limit: number, cursor?: string) {
  const pages: number[][] = [];
  for (let more = true; more; ) {
    const { page, size } = await readEventPage(connection.db, protector, scope, cursor, limit);
    expect(page.events).toHaveLength(size);
    pages.push(page.events.map((e) => e.sequence));
    cursor = page.next_cursor;
    more = page.has_more;
  }
  return { pages, cursor: cursor! };
}

const refusal = (read: Promise<unknown>) =>
  read.then(
    () => undefined,
    (error: { status?: number; details?: unknown; message: string }) => error,
  );

describe('a cursor-paged read of one order’s events (readEventPage with a narrowed scope)', () => {
  it('pages only the order’s rows in sequence order, every one once, and continues from its cursor as events commit', async () => {
    const stream = await newStream();
    const [a, b] = [randomUUID(), randomUUID()];
    await writeEvents(stream, 0, [a, b, null, a, b, b, a, null, a, b], new Date());
    const orderA = orderEventsScope(stream, a);

    const { pages, cursor } = await readAll(orderA, 2);
    expect(pages).toEqual([
      [1, 4],
      [7, 9],
    ]);
    // The order's last page is answered empty from its cursor (the stream goes on with another order's event): no archived refusal.
    expect((await readEventPage(connection.db, protector, orderA, cursor, 2)).page).toMatchObject({ events: [], has_more: false, next_cursor: cursor });
    expect((await readAll(orderEventsScope(stream, b), 10)).pages).toEqual([[2, 5, 6, 10]]);

    await writeEvents(stream, 10, [b, a, a], new Date());
    const next = await readAll(orderA, 1, cursor);
    expect(next.pages).toEqual([[12], [13]]);
    // The whole stream reads the same through the helper and through readEvents (GET /v1/events).
    const whole = await readEventPage(connection.db, protector, streamScope(stream), undefined, 100);
    expect(whole.page.events.map((e) => e.sequence)).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    expect(JSON.stringify(whole.page)).toBe(JSON.stringify(await readEvents(connection.db, protector, stream as Caller, undefined, 100)));
  });

  it('an order’s cursor is bound to the order: the stream’s, another order’s and another stream’s order cursors are refused, and it is refused by the stream', async () => {
    const stream = await newStream();
    const [a, b] = [randomUUID(), randomUUID()];
    await writeEvents(stream, 0, [a, b, a], new Date());
    const orderA = orderEventsScope(stream, a);
    const streamCursor = (await readEventPage(connection.db, protector, streamScope(stream), undefined, 1)).page.next_cursor;
    const orderCursor = (await readEventPage(connection.db, protector, orderA, undefined, 1)).page.next_cursor;
    // Same position (sequence 1), different lists: different cursors.
    expect(orderCursor).not.toBe(streamCursor);
    expect(orderCursor).toBe(encodeScopeCursor(protector, orderA, 1));

    const elsewhere = await newStream();
    for (const [scope, cursor] of [
      [orderA, streamCursor],
      [orderEventsScope(stream, b), orderCursor],
      [orderEventsScope(elsewhere, a), orderCursor],
    ] as const) {
      const error = await refusal(readEventPage(connection.db, protector, scope, cursor, 10));
      expect(error).toMatchObject({ status: 400, details: [{ field: 'cursor', issue: 'cursor_of_another_stream' }] });
      expect(error!.message).toMatch(/another list of events/);
    }
    const byStream = await refusal(readEvents(connection.db, protector, stream as Caller, orderCursor, 10));
    expect(byStream).toMatchObject({ status: 400, details: [{ field: 'cursor', issue: 'cursor_of_another_stream' }] });
    expect(byStream!.message).toBe('The cursor belongs to another stream (another API client or environment); use a next_cursor this stream returned.');

    // At the head, and one past it.
    expect((await readEventPage(connection.db, protector, orderA, encodeScopeCursor(protector, orderA, 3), 10)).page).toMatchObject({ events: [], has_more: false });
    const ahead = await refusal(readEventPage(connection.db, protector, orderA, encodeScopeCursor(protector, orderA, 4), 10));
    expect(ahead).toMatchObject({ status: 400, details: [{ field: 'cursor', issue: 'cursor_ahead_of_stream' }] });
  });

  it('an archived month is never skipped silently, though the order’s own rows are not dense: the stream’s oldest kept event tells', async () => {
    const stream = await newStream();
    const [a, b] = [randomUUID(), randomUUID()];
    await ensureEventPartitions(connection.sql, new Date(), { since: utc('2025-06-01') });
    await writeEvents(stream, 0, [a, b, a, b, a], utc('2025-06-10'));
    await writeEvents(stream, 5, [b, b, a, b, b], utc('2025-07-10'));
    await writeEvents(stream, 10, [b, a, b, a, b], utc('2025-08-10'));
    const orderA = orderEventsScope(stream, a);
    const orderB = orderEventsScope(stream, b);
    const first = (await readEventPage(connection.db, protector, orderA, undefined, 1)).page;
    expect(first.events.map((e) => e.sequence)).toEqual([1]);
    // B's cursor at 10, the last event of July: its next event is kept (11).
    const bAtTen = encodeScopeCursor(protector, orderB, 10);

    expect(await detachPartitionsBefore(connection.sql, 'events', utc('2025-08-01'), { drop: false })).toEqual(['events_p2025_06', 'events_p2025_07']);
    const refused = await refusal(readEventPage(connection.db, protector, orderA, first.next_cursor, 10));
    expect(refused).toMatchObject({ status: 400, details: [{ field: 'cursor', issue: 'cursor_events_archived' }] });
    expect(refused!.message).toMatch(/from sequence 2 to 10\b.*oldest event kept \(sequence 11\)/);
    // Its rows past the archive start at 12, yet a cursor right before the oldest kept reads on.
    expect((await readAll(orderB, 10, bAtTen)).pages).toEqual([[11, 13, 15]]);
    expect((await readAll(orderA, 10)).pages).toEqual([[12, 14]]);
  });
});
