import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeKey } from '@lop/domain';
import { killAllApiProcesses, startApiProcess, type ApiProcess } from '../testing/api-process';
import { connectFixtures } from '../testing/harness';
import { buildTenant, fixtures, type Tenant, testDatabaseUrl } from '@lop/testing';

/**
 * Revocation is immediate on every replica (DESIGN §4): the request right after the revoking commit
 * is refused by both API processes, with no pause in between. This guards any future key cache: one
 * invalidated by LISTEN/NOTIFY was tried and failed here on a loaded machine, because the
 * notification can reach a replica after the partner's next request does.
 */
const connection = connectFixtures();
const f = fixtures(connection.db);
const replicas: ApiProcess[] = [];
let tenant: Tenant;

beforeAll(async () => {
  tenant = await buildTenant(f);
  replicas.push(...(await Promise.all([startApiProcess(testDatabaseUrl()), startApiProcess(testDatabaseUrl())])));
});
afterAll(async () => {
  for (const replica of replicas) await replica.kill('SIGTERM');
  killAllApiProcesses();
  await connection.close();
});

async function warm(key: string) {
  for (const replica of replicas) {
    for (let i = 0; i < 3; i++) expect((await replica.call('GET', '/v1/health', { key })).status).toBe(200);
  }
}

describe('key revocation across two API processes', () => {
  it('a revoked key is refused by both replicas on the very next request', { timeout: 60_000 }, async () => {
    for (let round = 0; round < 5; round++) {
      const key = await tenant.key();
      await warm(key);

      const [row] = await connection.sql<{ id: string }[]>`select id from api_keys where client_id = ${tenant.clientId} order by created_at desc limit 1`;
      await revokeKey(connection.db, row.id);
      const [a, b] = await Promise.all(replicas.map((replica) => replica.call('GET', '/v1/health', { key })));
      expect([a.status, b.status]).toEqual([401, 401]);
      expect(a.body.error.message).toMatch(/revoked/);
    }
  });

  it('disabling the API client refuses its keys on both replicas at once', { timeout: 60_000 }, async () => {
    const other = await buildTenant(f);
    const key = await other.key();
    await warm(key);
    await f.disableClient(other.clientId);
    const statuses = await Promise.all(replicas.map(async (replica) => (await replica.call('GET', '/v1/health', { key })).status));
    expect(statuses).toEqual([401, 401]);
  });

  it('an expired key is refused by both replicas', { timeout: 60_000 }, async () => {
    const key = await tenant.key({ expiresAt: new Date(Date.now() + 3_000) });
    await warm(key);
    await new Promise((resolve) => setTimeout(resolve, 3_100));
    const statuses = await Promise.all(replicas.map(async (replica) => (await replica.call('GET', '/v1/health', { key })).status));
    expect(statuses).toEqual([401, 401]);
  });
});
