import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { CODE_NEEDS_MIGRATION, connectDatabase, readMigrations, withDatabase } from '@lop/db';
import { testDatabaseUrl } from '@lop/testing';
import { startAppOver, startDatabaseProxy } from '../testing/harness';

/** /readyz names why the process cannot serve partners (README § Health probes); /livez never needs the database. */
describe('health probes', () => {
  const admin = postgres(withDatabase(testDatabaseUrl(), 'postgres'), { max: 1, onnotice: () => undefined });
  const created: string[] = [];
  afterAll(async () => {
    for (const name of created) await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  });

  it('ready on the run database', async () => {
    const api = await startAppOver(connectDatabase(testDatabaseUrl(), { max: 1 }));
    try {
      const ready = await api.fetch('GET', '/readyz');
      expect([ready.status, ready.body]).toEqual([200, { status: 'ready' }]);
    } finally {
      await api.close();
    }
  });

  it('migrating, with the number of pending migrations, on a database the migrations have not reached', async () => {
    const name = `lop_unmigrated_${randomBytes(4).toString('hex')}`;
    await admin.unsafe(`create database "${name}"`);
    created.push(name);
    const api = await startAppOver(connectDatabase(withDatabase(testDatabaseUrl(), name), { max: 1 }));
    try {
      const response = await api.fetch('GET', '/readyz');
      expect(response.status).toBe(503);
      expect(response.body.status).toBe('migrating');
      expect(response.body.pending_migrations).toBeGreaterThan(0);
    } finally {
      await api.close();
    }
  });

  it('ready on the previous release\'s schema (a rolling upgrade before it migrates); schema_too_new once a newer release\'s contract step shuts this build out', async () => {
    const name = `lop_rollout_${randomBytes(4).toString('hex')}`;
    await admin.unsafe(`create database "${name}"`);
    created.push(name);
    const url = withDatabase(testDatabaseUrl(), name);
    const previous = readMigrations().slice(0, readMigrations().findIndex((migration) => migration.tag === CODE_NEEDS_MIGRATION) + 1);
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      // What the previous release applied, recorded as drizzle's migrator recorded it.
      await sql`create schema drizzle`;
      await sql`create table drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`;
      for (const migration of previous) {
        for (const statement of migration.statements) await sql.unsafe(statement.text);
        await sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`;
      }
      const api = await startAppOver(connectDatabase(url, { max: 1 }));
      try {
        expect((await api.fetch('GET', '/readyz')).body).toEqual({ status: 'ready' });
        await sql`create table drizzle.lop_schema_contracts (created_at bigint primary key, tag text not null, requires_code_from text not null)`;
        await sql`insert into drizzle.lop_schema_contracts values (${Date.now()}, '9002_drop_old_columns', '9001_stop_reading_them')`;
        const refused = await api.fetch('GET', '/readyz');
        expect([refused.status, refused.body]).toEqual([503, { status: 'schema_too_new' }]);
      } finally {
        await api.close();
      }
    } finally {
      await sql.end();
    }
  });

  it('database_unreachable when connections are refused, never "migrating"; /livez still 200', async () => {
    const api = await startAppOver(connectDatabase('postgres://postgres@127.0.0.1:9/none', { max: 1 }));
    try {
      const response = await api.fetch('GET', '/readyz');
      expect([response.status, response.body]).toEqual([503, { status: 'database_unreachable' }]);
      expect((await api.fetch('GET', '/livez')).status).toBe(200);
    } finally {
      await api.close();
    }
  });

  it('database_timeout when the database stalls, answered within the query timeout', async () => {
    const proxy = await startDatabaseProxy();
    const api = await startAppOver(connectDatabase(proxy.url, { max: 1, timeouts: { statementSeconds: 0.5, querySeconds: 1, idleInTransactionSeconds: 5 } }));
    try {
      const first = await api.fetch('GET', '/readyz');
      expect(first.status, first.text + api.log.text()).toBe(200);
      proxy.freeze();
      const started = Date.now();
      const response = await api.fetch('GET', '/readyz');
      expect([response.status, response.body]).toEqual([503, { status: 'database_timeout' }]);
      expect(Date.now() - started).toBeLessThan(2_000);
      // While it stays stalled one check probes the database (closing its silent connections) and
      // the others answer at once; all say database_timeout, none database_unreachable.
      const again = Date.now();
      const [probe, other] = await Promise.all([api.fetch('GET', '/readyz'), new Promise((resolve) => setTimeout(resolve, 50)).then(() => api.fetch('GET', '/readyz'))]);
      expect([probe.body, other.body]).toEqual([{ status: 'database_timeout' }, { status: 'database_timeout' }]);
      expect(Date.now() - again).toBeLessThan(1_800);
      proxy.thaw();
      await expect.poll(async () => (await api.fetch('GET', '/readyz')).status, { timeout: 5_000 }).toBe(200);
    } finally {
      proxy.thaw();
      await api.close();
      await proxy.close();
    }
  });
});
