import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, freePort, migrationsFolderOf, runMigrations, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { PROJECT_ROOT } from '@lop/domain';
import { newPartner, TEST_ENCRYPTION_KEY, testDatabaseUrl, type Partner } from '@lop/testing';
import { sampleLocks } from './lock-sampler';

/**
 * Issue 32's bar for partitioning events: a database holding over a million events, written under
 * the schema before the change (0015), migrates to the partitioned table while partners create
 * orders and page their streams through a running API process of this release — one that started
 * on the old schema, so its prepared `select * from events` must survive the swap. No request may
 * fail, no lock may block partners for a second, and the stream must read the same bytes after.
 */
const EVENTS = Number(process.env.PARTITION_TEST_EVENTS ?? 1_000_000);
const PARTNERS = 4;
const BEFORE_PARTITIONING = '0015_deferrable_delivery_event_check';

let database: TestDatabase;
let connection: DatabaseConnection;
let api: { child: ChildProcess; url: string; output: () => string; exited: Promise<number | null> } | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'lop-partition-'));
chmodSync(dataDir, 0o755);

beforeAll(async () => {
  database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'partition', { migrated: false });
  const older = await migrationsFolderOf({ upTo: BEFORE_PARTITIONING });
  await runMigrations(database.url, { folder: older.folder }).finally(() => older.remove());
  connection = connectDatabase(database.url, { max: 4, applicationName: 'partition-test' });
}, 120_000);

afterAll(async () => {
  if (api && api.child.exitCode === null) {
    api.child.kill('SIGTERM');
    await api.exited;
  }
  await connection?.close();
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Events of each partner's stream, spread over the last six months in sequence order, as months of traffic leave them. */
async function writeHistory(partners: Partner[], perPartner: number): Promise<void> {
  for (const partner of partners) {
    for (let from = 1; from <= perPartner; from += 100_000) {
      const to = Math.min(perPartner, from + 99_999);
      await connection.sql`
        insert into events (id, client_id, environment, sequence, type, version, occurred_at, program_id, order_id, data, body, created_at)
        select e.id, ${partner.clientId}, 'sandbox', e.g, 'order.updated', 1, e.at, ${partner.programId}, e.order_id, e.data,
               json_build_object('event_id', e.id, 'type', 'order.updated', 'version', 1, 'occurred_at', to_char(e.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                 'environment', 'sandbox', 'program_id', ${partner.programId}::uuid, 'sequence', e.g, 'data', e.data)::text,
               e.at
        from (
          select g, gen_random_uuid() as id, gen_random_uuid() as order_id,
                 now() - interval '183 days' + (g::float8 / ${perPartner}) * interval '182 days' as at,
                 jsonb_build_object('order_id', gen_random_uuid(), 'external_order_id', 'history-' || g, 'lifecycle', 'active') as data
          from generate_series(${from}::int, ${to}::int) g) e`;
    }
    await connection.sql`
      insert into event_streams (client_id, environment, last_sequence) values (${partner.clientId}, 'sandbox', ${perPartner})
      on conflict (client_id, environment) do update set last_sequence = excluded.last_sequence`;
  }
  await connection.sql`analyze events`;
}

async function startApi(): Promise<NonNullable<typeof api>> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'tools/build/run-bundled.mjs'), 'apps/partner-api/src/main.ts'], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      PARTNER_DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      PARTNER_METRICS_PORT: '0',
      PARTNER_DB_POOL_SIZE: '6',
      PARTNER_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-100_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = { child, url: `http://127.0.0.1:${port}`, output: () => output, exited };
  for (const deadline = Date.now() + 90_000; ; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (child.exitCode !== null) throw new Error(`the API exited early: ${output}`);
    if (Date.now() > deadline) throw new Error(`the API was not ready in time: ${output}`);
    if (await fetch(`${started.url}/readyz`).then((r) => r.status === 200, () => false)) return started;
  }
}

/** A response's bytes but its request id, the one part that differs between two reads. */
const withoutRequestId = (text: string) => text.replace(/"request_id":"req_[0-9a-f]+"/, '"request_id":"…"');

interface Failure {
  route: string;
  status: number;
  error: string;
}

describe('events partitioned online (0016-0019)', () => {
  it(`with ${EVENTS.toLocaleString('en-US')} events: migrates while partners create orders and page their streams, no request fails, no lock over 1 s, the same bytes after`, { timeout: 900_000 }, async () => {
    const partners: Partner[] = [];
    for (let i = 0; i < PARTNERS; i++) partners.push(await newPartner(connection.db, connection.sql));
    const loadStarted = Date.now();
    await writeHistory(partners, Math.ceil(EVENTS / PARTNERS));
    const [{ n: events }] = await connection.sql<{ n: number }[]>`select count(*)::int as n from events`;
    console.log(`partition test: ${events.toLocaleString('en-US')} events written under ${BEFORE_PARTITIONING} in ${((Date.now() - loadStarted) / 1000).toFixed(1)} s`);
    expect(events).toBeGreaterThanOrEqual(1_000_000);

    api = await startApi();
    const get = (partner: Partner, path: string) => fetch(`${api!.url}${PARTNER_BASE_PATH}${path}`, { headers: { authorization: `Bearer ${partner.key}` } });
    const failures: Failure[] = [];
    const counts: Record<string, number> = {};
    const record = (route: string, status: number, error = '') => {
      counts[`${route} ${status}`] = (counts[`${route} ${status}`] ?? 0) + 1;
      if (status === 0 || status >= 500) failures.push({ route, status, error });
    };

    // Pages at cursors spread over history, read once before the migration: compared byte for byte after.
    const samples: { partner: Partner; cursor: string; bytes: string }[] = [];
    for (const partner of partners.slice(0, 2)) {
      let cursor = '';
      for (let page = 0; page < 6; page++) {
        const response = await get(partner, `/v1/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
        expect(response.status).toBe(200);
        const bytes = await response.text();
        samples.push({ partner, cursor, bytes: withoutRequestId(bytes) });
        cursor = (JSON.parse(bytes) as { data: { next_cursor: string } }).data.next_cursor;
      }
    }

    // Partners' traffic: each creates orders and pages its stream onwards from where it was.
    let trafficOn = true;
    const loop = async (partner: Partner, id: number) => {
      let cursor = '';
      for (let i = 0; trafficOn; i++) {
        try {
          const created = await fetch(`${api!.url}${PARTNER_BASE_PATH}/v1/orders`, {
            method: 'POST',
            headers: { authorization: `Bearer ${partner.key}`, 'content-type': 'application/json', 'idempotency-key': `partition-${id}-${i}-${randomBytes(4).toString('hex')}` },
            body: JSON.stringify({ external_order_id: `partition-${id}-${i}-${randomBytes(3).toString('hex')}`, program_id: partner.programId, item_id: partner.itemId, external_subject_id: partner.subject, collection: 'in_person_draw' }),
          });
          await created.text();
          record('POST /v1/orders', created.status);
          const page = await get(partner, `/v1/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
          const text = await page.text();
          record('GET /v1/events', page.status, page.status >= 400 ? text.slice(0, 300) : '');
          if (page.status === 200) cursor = (JSON.parse(text) as { data: { next_cursor: string } }).data.next_cursor;
        } catch (error) {
          record('request', 0, String((error as { cause?: unknown }).cause ?? error));
        }
      }
    };
    const sampler = sampleLocks(database.url);
    const traffic = Promise.all(partners.map(loop));
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    const progress: string[] = [];
    const migrateStarted = Date.now();
    const run = await runMigrations(database.url, { onProgress: (line) => progress.push(line) });
    const migrateMs = Date.now() - migrateStarted;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    trafficOn = false;
    await traffic;
    await sampler.stop();

    console.log(`partition test: migrated in ${migrateMs} ms (${run.retries} retries)\n  ${progress.join('\n  ')}`);
    console.log(`partition test: longest blocking lock ${JSON.stringify(sampler.longestBlocking)}; longest held ${JSON.stringify(sampler.longestHeld)}; longest wait ${JSON.stringify(sampler.longestWait)}; ${sampler.samples} samples`);
    console.log(`partition test: requests ${JSON.stringify(counts)}`);

    // The retention tables' partitioning (0020-0024) follows in the same run.
    expect(run.applied.slice(0, 4)).toEqual(['0016_drop_delivery_event_fk', '0017_bound_legacy_events', '0018_partitioned_events', '0019_swap_in_partitioned_events']);
    expect(failures).toEqual([]);
    expect(counts['POST /v1/orders 201']).toBeGreaterThan(10);
    expect(sampler.samples).toBeGreaterThan(100);
    expect(sampler.longestBlocking?.ms ?? 0, JSON.stringify(sampler.longestBlocking)).toBeLessThan(1_000);

    // events is the partitioned table now, its history one attached partition, and nothing scanned it under lock.
    const partitions = await connection.sql<{ name: string; rows: number }[]>`
      select c.relname as name, c.reltuples::bigint::int as rows from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'events'::regclass order by 1`;
    expect(partitions[0].name).toBe('events_legacy');
    const [{ kind }] = await connection.sql<{ kind: string }[]>`select relkind as kind from pg_class where oid = 'events'::regclass`;
    expect(kind).toBe('p');

    // The same bytes at the same cursors, and every stream still dense.
    for (const sample of samples) {
      const response = await get(sample.partner, `/v1/events?limit=500${sample.cursor ? `&cursor=${sample.cursor}` : ''}`);
      expect(response.status).toBe(200);
      expect(withoutRequestId(await response.text())).toBe(sample.bytes);
    }
    for (const partner of partners) {
      const [stream] = await connection.sql<{ n: number; distinct: number; max: number; head: number }[]>`
        select count(*)::int as n, count(distinct sequence)::int as distinct, max(sequence)::int as max,
               (select last_sequence::int from event_streams where client_id = ${partner.clientId} and environment = 'sandbox') as head
        from events where client_id = ${partner.clientId} and environment = 'sandbox'`;
      expect(stream).toEqual({ n: stream.head, distinct: stream.head, max: stream.head, head: stream.head });
    }
    // The API process that started on the single table served throughout and still does.
    expect(api.output()).not.toMatch(/cached plan must not change result type/);
  });
});
