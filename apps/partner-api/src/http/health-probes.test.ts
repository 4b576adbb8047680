import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase, withDatabase } from '@lop/db';
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
