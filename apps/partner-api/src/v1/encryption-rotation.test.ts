import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { DataProtector, encryptionStatus, keyVersionOf, loadConfig, loadKeyring } from '@lop/domain';
import { buildTenant, fixtures, testDatabaseUrl, type Tenant } from '@lop/testing';
import { createLogger, startPartnerApi, type RunningApi } from '../main';
import { testApi, type TestApi } from '../testing/harness';
import { NO_RATE_LIMIT, orderBody, ordersClient, type OrdersClient } from '../testing/orders';

/**
 * Issue 33: rotation of the key that seals personal data, under traffic, with data, through the
 * real API, the real worker (its bundle, as its own process) and the real admin CLI. The worker is
 * SIGKILLed in the middle of re-encryption and restarted.
 */
const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const MASTER_KEY = randomBytes(32).toString('base64');
const SEEDED = 6000;

let database: TestDatabase;
let connection: DatabaseConnection;
let running: RunningApi;
let api: TestApi;
let tenant: Tenant;
let client: OrdersClient;
let subject: string;
const children = new Set<ChildProcess>();
/** Every order with personal data, and what it must decrypt to. */
const expected = new Map<string, unknown>();

function spawnBundle(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, ['tools/build/run-bundled.mjs', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: database.url, PARTNER_ENCRYPTION_KEY: MASTER_KEY, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

/** The delivery worker, slowed to small batches so that it can be killed in the middle. */
const startWorker = () => spawnBundle(['apps/delivery-worker/src/main.ts'], { PARTNER_KEY_ROTATION_BATCH_SIZE: '100', PARTNER_KEY_ROTATION_PAUSE_MS: '20' });

async function admin(...args: string[]) {
  const run = spawnBundle(['--inline', 'tools/admin/main.ts', 'encryption', ...args], {});
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 120_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

const status = () => encryptionStatus(connection.sql);
const remaining = async () => {
  const s = await status();
  return s.job.remaining.orders + s.job.remaining.webhook_subscriptions;
};
const storedOf = async (id: string) => (await connection.sql<{ protected_data: string }[]>`select protected_data from orders where id = ${id}`)[0].protected_data;

/** Partner traffic until stopped: creates with personal data and reads of orders, every answer checked. */
function traffic() {
  let stop = false;
  const failures: string[] = [];
  const created: { id: string; at: number }[] = [];
  let reads = 0;
  const ids = [...expected.keys()];
  const loop = async () => {
    while (!stop) {
      const notes = `notes ${randomUUID()}`;
      const body = orderBody(tenant.sandbox.program, tenant.sandbox.item, subject, { clinical_notes: notes });
      const response = await client.create(body);
      if (response.status !== 201) failures.push(`create ${response.status} ${response.text}`);
      else {
        expected.set(response.body.data.order_id, { clinical_notes: notes });
        ids.push(response.body.data.order_id);
        created.push({ id: response.body.data.order_id, at: Date.now() });
      }
      for (let i = 0; i < 3; i++) {
        const id = ids[Math.floor(Math.random() * ids.length)];
        const read = await client.get(id);
        reads += 1;
        if (read.status !== 200 || read.body.data.order_id !== id) failures.push(`read ${id}: ${read.status} ${read.text}`);
      }
    }
  };
  const loops = Promise.all([loop(), loop()]);
  return {
    failures,
    created,
    reads: () => reads,
    stop: async () => {
      stop = true;
      await loops;
    },
  };
}

beforeAll(async () => {
  // Its own database: a rotation is global to a database.
  database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'keyrottraffic');
  connection = connectDatabase(database.url, { max: 4 });
  tenant = await buildTenant(fixtures(connection.db));
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', PARTNER_DB_POOL_SIZE: '6', PARTNER_ENCRYPTION_KEY: MASTER_KEY, ...NO_RATE_LIMIT });
  running = await startPartnerApi({ config, databaseUrl: database.url, logger: createLogger(config, 'key-rotation-test') });
  api = testApi(running.url, () => running.close());
  client = ordersClient(api, await tenant.key());
  subject = await client.subject();

  // History written before the rotation, as this release (and the previous one) writes it: v1.
  const before = new DataProtector(Buffer.from(MASTER_KEY, 'base64'));
  const first = await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject, { clinical_notes: 'through the API' }));
  expect(first.status, first.text).toBe(201);
  expected.set(first.body.data.order_id, { clinical_notes: 'through the API' });
  for (let done = 0; done < SEEDED; done += 1000) {
    const values = Array.from({ length: 1000 }, (_, i) => ({ patient: { legal_last_name: `Seeded-${done + i}` }, clinical_notes: randomUUID() }));
    const rows = await connection.sql<{ id: string }[]>`
      insert into orders (laboratory_id, client_id, environment, external_order_id, program_id, item_id, external_subject_id, collection, protected_data, synthetic, lifecycle_detail)
      select ${tenant.laboratory.id}, ${tenant.clientId}, 'sandbox', 'seed-' || gen_random_uuid(), ${tenant.sandbox.program.id}, ${tenant.sandbox.item.id}, ${subject}, 'in_person_draw', sealed, true, 'received'
      from unnest(${values.map((v) => before.encrypt(v))}::text[]) with ordinality as s(sealed, n) order by n
      returning id`;
    rows.forEach((row, i) => expected.set(row.id, values[i]));
  }
  // Webhook signing secrets are sealed too.
  for (let i = 0; i < 3; i++) {
    await connection.sql`
      insert into webhook_subscriptions (laboratory_id, client_id, environment, url, event_types, secret_protected)
      values (${tenant.laboratory.id}, ${tenant.clientId}, 'sandbox', ${`https://hooks.partner.example/${i}`}, ${['order.created']}, ${before.encrypt(`whsec_${i}`)})`;
  }
}, 300_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await api?.close();
  await connection?.close();
  await database?.drop();
});

describe('online encryption-key rotation under traffic', () => {
  it('rotates, re-encrypts every row while orders are created and read, survives a SIGKILL of the worker, then retires the old key', async () => {
    expect((await status()).current_version).toBe(1);
    // The API starts before the rotation. The worker starts after the check below: its
    // re-encryption would turn an order the API sealed with version 1 into a version 2 one, and
    // make the check find a "first new" order too early (it did, under CI's load). A worker
    // started after a rotation runs the job at start.
    const load = traffic();
    await until('traffic', async () => load.reads() > 20);

    const rotated = await admin('rotate', '--json');
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(JSON.parse(rotated.stdout)).toEqual({ version: 2, previous: 1 });
    const rotatedAt = Date.now();

    // The API, running since before the rotation, writes with version 2 from the first create
    // after it heard (NOTIFY): measured as the first order created after the command returned.
    const firstNew = await until('an order sealed with version 2', async () => {
      for (const order of load.created) if (keyVersionOf(await storedOf(order.id)) === 2) return order;
      return undefined;
    });
    const laterOld = [];
    for (const order of load.created) if (order.at > firstNew.at && keyVersionOf(await storedOf(order.id)) !== 2) laterOld.push(order.id);
    expect(laterOld).toEqual([]);
    console.log(`first order sealed with the new key created ${firstNew.at - rotatedAt} ms after \`admin encryption rotate\` returned`);
    let worker = startWorker();

    // Kill the worker in the middle of re-encryption.
    const midway = await until('re-encryption under way', async () => {
      const s = await status();
      return s.job.reencrypted_rows > 500 && s.job.remaining.orders > 1000 && s;
    });
    worker.child.kill('SIGKILL');
    await worker.exited;
    const afterKill = await status();
    expect(afterKill.job.remaining.orders).toBeGreaterThan(0);
    console.log(`worker SIGKILLed with ${afterKill.job.reencrypted_rows} rows re-encrypted and ${afterKill.job.remaining.orders} orders left (status read midway: ${midway.job.reencrypted_rows})`);

    // Retiring the old key is refused while rows need it, naming the counts.
    const refused = await admin('retire', '1');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/key version 1 is still needed by orders [1-9][0-9]*, webhook_subscriptions [0-9]+ row\(s\)/);
    const current = await admin('retire', '2');
    expect(current.code).toBe(2);
    expect(current.stderr).toMatch(/key version 2 is the current key/);

    // Nothing moves while no worker runs; a restarted worker resumes and finishes.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await status()).job.remaining.orders).toBe(afterKill.job.remaining.orders);
    const resumedAt = Date.now();
    worker = startWorker();
    await until('re-encryption finished', async () => (await remaining()) === 0, 180_000, 200);
    console.log(`resumed and finished in ${Date.now() - resumedAt} ms (including the worker's start)`);
    await load.stop();
    expect(load.failures).toEqual([]);
    console.log(`traffic: ${load.created.length} orders created and ${load.reads()} read during the rotation, none failed`);

    const readable = await admin('status');
    expect(readable.code, readable.stderr).toBe(0);
    expect(readable.stdout).toMatch(/Current key version: 2/);
    expect(readable.stdout).toMatch(/remaining rows +0 /);

    // Every row: sealed once with version 2, and decrypts to exactly what was written.
    const reader = new DataProtector(Buffer.from(MASTER_KEY, 'base64'));
    await loadKeyring(connection.sql, reader);
    const rows = await connection.sql<{ id: string; protected_data: string; key_version: number }[]>`select id, protected_data, key_version from orders where protected_data is not null`;
    expect(rows.length).toBe(expected.size);
    for (const row of rows) {
      expect(row.key_version).toBe(2);
      expect(row.protected_data.startsWith('v2.2.')).toBe(true);
      expect(reader.decrypt(row.protected_data), row.id).toEqual(expected.get(row.id));
    }
    const secrets = await connection.sql<{ url: string; secret_protected: string }[]>`select url, secret_protected from webhook_subscriptions order by url`;
    expect(secrets.map((s) => reader.decrypt(s.secret_protected))).toEqual(['whsec_0', 'whsec_1', 'whsec_2']);
    const final = await status();
    expect(final.versions.map((v) => [v.version, v.rows])).toEqual([
      [1, { orders: 0, webhook_subscriptions: 0 }],
      [2, { orders: expected.size, webhook_subscriptions: 3 }],
    ]);
    // Counted once per row moved, across the kill (a batch in flight at the kill was rolled back).
    expect(final.job.reencrypted_rows).toBe(SEEDED + 1 + load.created.indexOf(firstNew) + 3);

    const retired = await admin('retire', '1', '--json');
    expect(retired.code, retired.stderr).toBe(0);
    expect(JSON.parse(retired.stdout)).toEqual({ version: 1, current_version: 2 });
    // Reads and writes go on after the retirement.
    const after = await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject, { clinical_notes: 'after' }));
    expect(after.status, after.text).toBe(201);
    expect(keyVersionOf(await storedOf(after.body.data.order_id))).toBe(2);
    worker.child.kill('SIGTERM');
    await worker.exited;
  }, 400_000);
});
