import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, withDatabase, type TestDatabase } from '@lop/db';
import { connectFixtures, startAppOver, startDatabaseProxy, startTestApi, type CapturedLog, type TestApi } from './testing/harness';
import { buildTenant, fixtures, testDatabaseUrl } from '@lop/testing';
import { expectError, expectSuccess } from './testing/expect-envelope';

describe('database failures answer the envelope, never internals', () => {
  describe('503 unavailable with Retry-After when the database cannot be reached', () => {
    let key: string;
    const connection = connectFixtures();
    beforeAll(async () => {
      key = await (await buildTenant(fixtures(connection.db))).key();
    });
    afterAll(() => connection.close());

    it('the database goes away under a running API, and service resumes when it is back', async () => {
      const proxy = await startDatabaseProxy();
      const api = await startTestApi({}, proxy.url);
      try {
        expectSuccess(await api.call('GET', '/v1/health', { key }));
        await proxy.cut();
        for (const path of ['/v1/health', '/v1/programs', '/v1/locations']) {
          const response = await api.call('GET', path, { key });
          const error = expectError(response, 503, 'unavailable');
          expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
          expect(error.message).not.toMatch(/ECONN|127\.0\.0\.1|5432|socket/i);
        }
        // The description document and liveness need no database; readiness does.
        expect((await api.fetch('GET', '/api/public/partner-openapi')).status).toBe(200);
        expect((await api.fetch('GET', '/livez')).status).toBe(200);
        expect((await api.fetch('GET', '/readyz')).status).toBe(503);
        await proxy.restore();
        expectSuccess(await api.call('GET', '/v1/health', { key }));
        expect((await api.fetch('GET', '/readyz')).status).toBe(200);
      } finally {
        await proxy.restore();
        await api.close();
        await proxy.close();
      }
    });

    it('a connection pool that has been closed', async () => {
      const closed = connectDatabase(testDatabaseUrl(), { max: 1 });
      await closed.close();
      const api = await startAppOver(closed);
      try {
        for (const path of ['/v1/health', '/v1/programs']) {
          const response = await api.call('GET', path, { key });
          expectError(response, 503, 'unavailable');
          expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
        }
        expect(api.log.lines.some((line) => line.level === 40 && /unavailable/.test(line.msg))).toBe(true);
      } finally {
        await api.close();
      }
    });
  });

  describe('500 internal_error when a procedure fails unexpectedly (the database lost a table)', () => {
    let broken: TestDatabase;
    let api: TestApi & { log: CapturedLog };
    let key: string;

    beforeAll(async () => {
      broken = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'broken');
      const setup = connectDatabase(broken.url, { max: 1 });
      const tenant = await buildTenant(fixtures(setup.db));
      key = await tenant.key();
      await setup.sql`alter table locations rename to locations_moved_by_operator`;
      await setup.close();
      api = await startAppOver(connectDatabase(broken.url, { max: 2 }));
    });
    afterAll(async () => {
      await api?.close();
      await broken?.drop();
    });

    it('answers 500 internal_error with no SQL, table name or stack in the body', async () => {
      const response = await api.call('GET', '/v1/locations', { key });
      const error = expectError(response, 500, 'internal_error');
      expect(response.text).not.toMatch(/locations_moved|does not exist|42P01/);
      expect(error.message).toMatch(/request_id/);
    });

    it('logs the failure once, with the request_id of the response, and without the key', async () => {
      const response = await api.call('GET', '/v1/locations', { key });
      const logged = api.log.lines.filter((line) => line.request_id === response.body.request_id && line.msg === 'unexpected error');
      expect(logged).toHaveLength(1);
      expect(logged[0].level).toBe(50);
      expect(JSON.stringify(logged[0].err)).toMatch(/locations/);
      expect(api.log.text()).not.toContain(key);
    });

    it('other endpoints keep working', async () => {
      expectSuccess(await api.call('GET', '/v1/health', { key }));
    });
  });
});
