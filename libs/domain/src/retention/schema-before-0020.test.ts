import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase, createTestDatabase, listPartitions, migrationsFolderOf, runMigrations, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { loadConfig } from '../config/config';
import { seedDemoTenant } from '../control-plane/demo-seed';
import { runMaintenancePass } from './maintenance-job';
import { retentionSettings } from './retention';

/**
 * This release's maintenance pass on the schema before its migrations 0020-0024 (a rollout may
 * start its workers before migrating): no partitions to make or drop, every table pruned by row
 * as the previous release did.
 */
let database: TestDatabase;
let connection: DatabaseConnection;
beforeAll(async () => {
  database = await createTestDatabase(withDatabase(inject('databaseUrl'), 'postgres'), 'before-0020', { migrated: false });
  const older = await migrationsFolderOf({ upTo: '0019_swap_in_partitioned_events' });
  await runMigrations(database.url, { folder: older.folder }).finally(() => older.remove());
  connection = connectDatabase(database.url, { max: 2, applicationName: 'schema-before-0020-test' });
});
afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

describe('retention on the schema before 0020 (nothing partitioned yet)', () => {
  it('makes no partition, drops none, and prunes deliveries, attempts and the request log by row', async () => {
    const tenant = await seedDemoTenant(connection.db);
    const sql = connection.sql;
    const [subscription] = await sql<{ id: string }[]>`
      insert into webhook_subscriptions (laboratory_id, client_id, environment, url, event_types, secret_protected)
      values (${tenant.laboratory_id}, ${tenant.client_id}, 'sandbox', 'https://hooks.partner.example/x', '{order.created}', 'x') returning id`;
    const [delivery] = await sql<{ id: string }[]>`
      insert into webhook_deliveries (subscription_id, kind, state, created_at, completed_at)
      values (${subscription.id}, 'test', 'delivered', now() - interval '40 days', now() - interval '40 days') returning id`;
    await sql`insert into webhook_delivery_attempts (delivery_id, attempt_number, started_at, outcome) values (${delivery.id}, 1, now() - interval '40 days', 'delivered')`;
    await sql`
      insert into sandbox_request_log (laboratory_id, client_id, environment, request_id, occurred_at, method, route, status, duration_ms, key_prefix, door)
      values (${tenant.laboratory_id}, ${tenant.client_id}, 'sandbox', 'req_old', now() - interval '8 days', 'GET', '/v1/lab', 200, 3, 'lop_test_AbCd', 'rest')`;
    const settings = retentionSettings(loadConfig({ PARTNER_WEBHOOK_RETENTION_DAYS: '30' }));
    const pass = await runMaintenancePass(sql, settings);
    expect(pass.partitionsCreated).toEqual([]);
    expect(pass.partitionsDropped).toEqual([]);
    expect(pass.pruned).toMatchObject({ webhook_deliveries: 1, webhook_delivery_attempts: 1, sandbox_request_log: 1 });
    expect(await listPartitions(sql, 'webhook_deliveries')).toEqual([]);
  });
});
