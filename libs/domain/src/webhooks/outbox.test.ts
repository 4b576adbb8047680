import { randomBytes } from 'node:crypto';
import { SCOPES } from '@lop/contract';
import { afterAll, describe, expect, it } from 'vitest';
import { createKey } from '../control-plane/control-plane';
import { appendEventsThrough, type EventOutbox } from '../events/append';
import { eventsOf, newOrder, openTestDatabase, orderUpdatedDraft } from '../../testing/orders';
import type { OrderRow } from '../orders/order-resource';
import { DataProtector } from '../security/protector';
import { appendEvents, DeliveryQueueMissingError } from './outbox';
import { createSubscription } from './subscriptions';

const connection = openTestDatabase();
const { db } = connection;
afterAll(() => connection.close());

const draft = (order: OrderRow) => orderUpdatedDraft(order, 'outbox');

describe('the outbox port: events define it, webhooks provide it', () => {
  it('the appended events reach the outbox in the transaction that writes them: an outbox that fails takes the events with it', async () => {
    const { order } = await newOrder(db);
    const stream = { clientId: order.clientId, environment: order.environment };
    const before = (await eventsOf(db, order)).length;
    const handed: unknown[] = [];
    const failing: EventOutbox = {
      mayPrecedeEvents: async () => true,
      write: async (_tx, to, events) => {
        handed.push({ to, types: events.map((e) => e.type) });
        throw new Error('outbox refused');
      },
    };
    await expect(db.transaction((tx) => appendEventsThrough(failing, tx, stream, [draft(order)]))).rejects.toThrow('outbox refused');
    expect(handed).toEqual([{ to: stream, types: ['order.updated'] }]);
    expect(await eventsOf(db, order)).toHaveLength(before);
    // The same draft through an outbox that takes it commits.
    await db.transaction((tx) => appendEventsThrough({ mayPrecedeEvents: async () => true, write: async () => undefined }, tx, stream, [draft(order)]));
    expect(await eventsOf(db, order)).toHaveLength(before + 1);
  });

  it('appendEvents, the one every writer imports, fans out to webhooks: an event a subscription takes cannot commit without a delivery queue', async () => {
    const { order } = await newOrder(db);
    await createKey(db, { clientId: order.clientId, environment: 'sandbox', scopes: [...SCOPES] });
    await createSubscription(db, new DataProtector(randomBytes(32)), { clientId: order.clientId, environment: 'sandbox', url: 'http://127.0.0.1:9/hooks', eventTypes: ['order.updated'] }, { allowLoopback: true, servicePorts: [] });
    const stream = { clientId: order.clientId, environment: order.environment };
    await expect(db.transaction((tx) => appendEvents(tx, stream, [draft(order)]))).rejects.toBeInstanceOf(DeliveryQueueMissingError);
  });
});
