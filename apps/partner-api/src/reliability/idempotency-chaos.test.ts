import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, ensureEmbeddedPostgres, runMigrations, type DatabaseConnection, type EmbeddedPostgresHandle } from '@lop/db';
import { freePort } from '@lop/db';
import { startTestApi, type TestApi, type TestResponse } from '../testing/harness';
import { NO_RATE_LIMIT, orderBody, ordersClient } from '../testing/orders';
import { buildTenant, fixtures, type Tenant, unique } from '@lop/testing';

/**
 * Issue 21, item 5: PostgreSQL dies under creates. A PostgreSQL of this test's own (the
 * embedded binaries, its own folder and port; the machine's server is never touched) is killed
 * with SIGKILL while creates are inside their transactions, then started again. Every key
 * retried must get 201 within 10 s of the restart, never a 409 idempotency_key_in_flight for a
 * request that died with the database.
 */
const CREATES = 12;
const RETRY_LIMIT_MS = 10_000;

let dataDir: string;
let port: number;
let server: EmbeddedPostgresHandle;
let fixturesDb: DatabaseConnection;
let api: TestApi;
let tenant: Tenant;

const start = () => ensureEmbeddedPostgres({ dataDir, port });

/** SIGKILL to the postmaster and every backend: a crash, not a shutdown (crash recovery on the next start). */
function killPostgres(): void {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' }).split('\n').map(Number).filter(Boolean);
  for (const pid of [postmaster, ...children]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

async function gone(url: string): Promise<void> {
  for (;;) {
    const probe = connectDatabase(url, { max: 1 });
    const up = await probe.sql`select 1`.then(() => true, () => false);
    await probe.close().catch(() => undefined);
    if (!up) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  // PostgreSQL runs as the `postgres` OS user when the tests run as root: it must reach the folder.
  dataDir = mkdtempSync(join(tmpdir(), 'lop-chaos-pg-'));
  chmodSync(dataDir, 0o755);
  port = await freePort();
  server = await start();
  await runMigrations(server.url);
  fixturesDb = connectDatabase(server.url, { max: 2 });
  tenant = await buildTenant(fixtures(fixturesDb.db));
  api = await startTestApi(
    {
      ...NO_RATE_LIMIT,
      // Every create of the burst inside its transaction at once, waiting on the held stream row.
      PARTNER_CLIENT_WRITE_CONCURRENCY: String(CREATES),
      PARTNER_DB_POOL_SIZE: String(CREATES + 4),
      PARTNER_DB_LOCK_TIMEOUT_SECONDS: '30',
      PARTNER_DB_STATEMENT_TIMEOUT_SECONDS: '30',
      PARTNER_DB_QUERY_TIMEOUT_SECONDS: '31',
    },
    server.url,
  );
}, 120_000);

afterAll(async () => {
  await api?.close();
  await fixturesDb?.close().catch(() => undefined);
  await server?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('PostgreSQL killed under creates', () => {
  it('after the restart every key retried gets 201 within 10 s, and none is answered 409 idempotency_key_in_flight', { timeout: 120_000 }, async () => {
    const client = ordersClient(api, await tenant.key());
    const subject = await client.subject();
    const requests = Array.from({ length: CREATES }, () => ({ idempotencyKey: unique('chaos'), body: orderBody(tenant.sandbox.program, tenant.sandbox.item, subject) }));

    // Hold the client's stream row so every create is genuinely inside its transaction, owning its key.
    const holder = fixturesDb.sql.begin(async (tx) => {
      await tx`insert into event_streams (client_id, environment, last_sequence) values (${tenant.clientId}, 'sandbox', 0) on conflict do nothing`;
      await tx`select 1 from event_streams where client_id = ${tenant.clientId} and environment = 'sandbox' for update`;
      await new Promise(() => undefined); // until PostgreSQL dies
    });
    holder.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const firstTries = requests.map((r) => client.create(r.body, { idempotencyKey: r.idempotencyKey }));
    await expect
      .poll(async () => (await fixturesDb.sql`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and application_name = 'partner-api'`)[0].n, {
        timeout: 10_000,
        interval: 50,
      })
      .toBe(CREATES);

    killPostgres();
    const failed = await Promise.all(firstTries);
    for (const response of failed) {
      expect(response.status, response.text).toBe(503);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    await gone(server.url);

    server = await start();
    const restartedAt = Date.now();
    const answers: TestResponse[] = [];
    const createdAfterMs = await Promise.all(
      requests.map(async ({ idempotencyKey, body }) => {
        for (;;) {
          const response = await client.create(body, { idempotencyKey });
          answers.push(response);
          if (response.status === 201) return Date.now() - restartedAt;
          if (Date.now() - restartedAt > RETRY_LIMIT_MS) return Infinity;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }),
    );

    console.log(`PostgreSQL killed under ${CREATES} creates and restarted: every key 201 within ${Math.max(...createdAfterMs)} ms of the restart; answers before that: ${JSON.stringify(answers.reduce<Record<number, number>>((n, r) => ({ ...n, [r.status]: (n[r.status] ?? 0) + 1 }), {}))}`);
    for (const ms of createdAfterMs) expect(ms).toBeLessThan(RETRY_LIMIT_MS);
    expect(answers.filter((r) => r.status === 409), JSON.stringify(answers.filter((r) => r.status === 409).map((r) => r.body))).toEqual([]);
    for (const response of answers.filter((r) => r.status !== 201)) expect(response.status, response.text).toBe(503);

    // One order per key, each a first creation (nothing survived the crash to replay).
    const created = answers.filter((r) => r.status === 201);
    expect(created.every((r) => r.headers.get('idempotent-replayed') === null)).toBe(true);
    const rows = await fixturesDb.sql`select count(*)::int as n from orders where client_id = ${tenant.clientId}`;
    expect(rows[0].n).toBe(CREATES);
  });
});
