import { randomBytes } from 'node:crypto';
import { SCOPES } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase, createTestDatabase, migrationsFolderOf, runMigrations, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { createKey } from '../control-plane/control-plane';
import { newOrder } from '../../testing/orders';
import { DataProtector } from '../security/protector';
import { openDeliveryQueue, type DeliveryQueue } from '../webhooks/delivery-queue';
import { loadDeliveries } from '../webhooks/delivery-store';
import { appendEvents, attachDeliveryQueue } from '../webhooks/outbox';
import { createSubscription } from '../webhooks/subscriptions';
import { readEvents } from './stream';

/**
 * This release on the schema before its migrations 0014 and 0015 (a rollout may start its replicas
 * before migrating, and the previous release keeps writing during it): no events.body, and a
 * delivery's check of its event that cannot be deferred.
 */
let database: TestDatabase;
let connection: DatabaseConnection;
let queue: DeliveryQueue;
let detach: () => void;
beforeAll(async () => {
  database = await createTestDatabase(withDatabase(inject('databaseUrl'), 'postgres'), 'before-0014', { migrated: false });
  const older = await migrationsFolderOf({ upTo: '0013_rollout_safe_indexes' });
  await runMigrations(database.url, { folder: older.folder }).finally(() => older.remove());
  connection = connectDatabase(database.url, { max: 2, applicationName: 'schema-before-0014-test' });
  queue = await openDeliveryQueue({ databaseUrl: database.url, settings: { attemptTimeoutSeconds: 5, pollIntervalSeconds: 1, historyRetentionSeconds: 86_400 }, role: 'sender' });
  detach = attachDeliveryQueue(queue);
});
afterAll(async () => {
  detach?.();
  await queue?.boss.stop({ graceful: false });
  await connection?.close();
  await database?.drop();
});

describe('on the schema before 0014', () => {
  it('appends as the previous release did (the outbox after the events, inside the numbering), pages the stream from the columns, and loads deliveries', async () => {
    const { db, sql } = connection;
    const { order } = await newOrder(db);
    await createKey(db, { clientId: order.clientId, environment: 'sandbox', scopes: [...SCOPES] });
    await createSubscription(db, new DataProtector(randomBytes(32)), { clientId: order.clientId, environment: 'sandbox', url: 'http://127.0.0.1:9/hooks', eventTypes: ['order.updated'] }, { allowLoopback: true, servicePorts: [] });
    const stream = { clientId: order.clientId, environment: order.environment };
    const data = { order_id: order.id, external_order_id: 'before-0014', program_id: order.programId, client_id: order.clientId, environment: 'sandbox' as const, lifecycle: 'active' as const };
    const appended = await db.transaction((tx) =>
      appendEvents(tx, stream, [
        { type: 'order.updated', occurredAt: new Date(), orderId: order.id, programId: order.programId, data },
        { type: 'order.updated', occurredAt: new Date(), orderId: order.id, programId: order.programId, data },
      ]),
    );
    expect(appended.map((e) => e.sequence)).toEqual([1, 2]);
    const [constraint] = await sql<{ deferrable: boolean }[]>`select condeferrable as deferrable from pg_constraint where conname = 'webhook_deliveries_event_id_events_id_fk'`;
    expect(constraint.deferrable).toBe(false);

    const caller = { clientId: order.clientId, environment: order.environment } as Caller;
    const page = await readEvents(db, new DataProtector(randomBytes(32)), caller, undefined, 10);
    expect(page.events).toEqual(appended);

    const deliveries = await sql<{ id: string; event_id: string }[]>`select id, event_id from webhook_deliveries where kind = 'event'`;
    expect(deliveries.map((d) => d.event_id).sort()).toEqual(appended.map((e) => e.event_id).sort());
    const loaded = await loadDeliveries(db, deliveries.map((d) => d.id));
    for (const delivery of deliveries) {
      const event = loaded.get(delivery.id)!.event!;
      expect(event.id).toBe(delivery.event_id);
      expect(event.body).toBeNull();
    }
  });
});
