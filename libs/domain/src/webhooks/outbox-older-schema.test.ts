import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase, createTestDatabase, migrationsFolderOf, runMigrations, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { SCOPES } from '../auth/scopes';
import { createKey } from '../control-plane/control-plane';
import { eventsOf, newOrder } from '../../testing/orders';
import { DataProtector } from '../security/protector';
import { openDeliveryQueue, type DeliveryQueue } from './delivery-queue';
import { appendEvents, attachDeliveryQueue } from './outbox';
import { createSubscription } from './subscriptions';

let database: TestDatabase;
let connection: DatabaseConnection;
let queue: DeliveryQueue;
let detach: () => void;
beforeAll(async () => {
  database = await createTestDatabase(withDatabase(inject('databaseUrl'), 'postgres'), 'outbox-0013', { migrated: false });
  const older = await migrationsFolderOf({ upTo: '0013_rollout_safe_indexes' });
  await runMigrations(database.url, { folder: older.folder }).finally(() => older.remove());
  connection = connectDatabase(database.url, { max: 2, applicationName: 'outbox-older-schema-test' });
  queue = await openDeliveryQueue({ databaseUrl: database.url, settings: { attemptTimeoutSeconds: 5, pollIntervalSeconds: 1, historyRetentionSeconds: 86_400 }, role: 'sender' });
  detach = attachDeliveryQueue(queue);
});
afterAll(async () => {
  detach?.();
  await queue?.boss.stop({ graceful: false });
  await connection?.close();
  await database?.drop();
});

describe('on the schema before 0014 (a rollout starts this release before migrating)', () => {
  it('the outbox follows the events it references, inside the numbering, as the previous release wrote it', async () => {
    const { db, sql } = connection;
    const { order } = await newOrder(db);
    await createKey(db, { clientId: order.clientId, environment: 'sandbox', scopes: [...SCOPES] });
    await createSubscription(db, new DataProtector(randomBytes(32)), { clientId: order.clientId, environment: 'sandbox', url: 'http://127.0.0.1:9/hooks', eventTypes: ['order.updated'] }, { allowLoopback: true, servicePorts: [] });
    const stream = { clientId: order.clientId, environment: order.environment };
    const data = { order_id: order.id, external_order_id: 'older-schema', program_id: order.programId, client_id: order.clientId, environment: 'sandbox' as const, lifecycle: 'active' as const };
    const appended = await db.transaction((tx) =>
      appendEvents(tx, stream, [
        { type: 'order.updated', occurredAt: new Date(), orderId: order.id, programId: order.programId, data },
        { type: 'order.updated', occurredAt: new Date(), orderId: order.id, programId: order.programId, data },
      ]),
    );
    expect(appended.map((e) => e.sequence)).toEqual([1, 2]);
    expect((await eventsOf(db, order)).map((e) => Number(e.sequence))).toEqual([1, 2]);
    const deliveries = await sql<{ event_id: string }[]>`select event_id from webhook_deliveries where kind = 'event' order by created_at, event_id`;
    expect(deliveries.map((d) => d.event_id).sort()).toEqual(appended.map((e) => e.event_id).sort());
    const [constraint] = await sql<{ deferrable: boolean }[]>`select condeferrable as deferrable from pg_constraint where conname = 'webhook_deliveries_event_id_events_id_fk'`;
    expect(constraint.deferrable).toBe(false);
  });
});
