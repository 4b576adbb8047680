import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { connectDatabase, createTestDatabase, migrationsFolderOf, runMigrations, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { seedDemoTenant } from '../control-plane/demo-seed';
import {
  encryptionStatus,
  keyVersionOf,
  KeyRotationRefused,
  readKeyring,
  reencryptAll,
  retireEncryptionKey,
  rotateEncryptionKey,
  watchKeyring,
  type KeyringWatch,
} from '../index';
import { DataProtector } from './protector';

// Its own database: rotating and retiring keys is global to a database, and other files of the
// run write `v1` rows with keys of their own.
let database: TestDatabase;
let connection: DatabaseConnection;
const masterKey = randomBytes(32);
const protector = () => new DataProtector(masterKey);
const watches: KeyringWatch[] = [];

/** A process of this release: its keyring kept current by NOTIFY. */
async function watchingProtector(): Promise<DataProtector> {
  const p = protector();
  watches.push(await watchKeyring(connection.sql, p));
  return p;
}


const serverUrl = () => withDatabase(inject('databaseUrl'), 'postgres');
const unique = (prefix: string) => `${prefix}-${randomUUID()}`;
let labId: string;
let clientId: string;
let programId: string;
let itemId: string;

/** An order row whose protected_data is `sealed` (what createOrder writes; the rest does not matter here). */
async function insertOrder(sealed: string | null, sql = connection.sql): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into orders (laboratory_id, client_id, environment, external_order_id, program_id, item_id, external_subject_id, collection, protected_data, synthetic, lifecycle_detail)
    values (${labId}, ${clientId}, 'sandbox', ${unique('ext')}, ${programId}, ${itemId}, 's', 'in_person_draw', ${sealed}, true, 'received')
    returning id`;
  return row.id;
}

const storedOf = async (id: string) => (await connection.sql<{ protected_data: string; key_version: number | null }[]>`select protected_data, key_version from orders where id = ${id}`)[0];

beforeAll(async () => {
  database = await createTestDatabase(serverUrl(), 'keyrotation');
  connection = connectDatabase(database.url, { max: 6 });
  const tenant = await seedDemoTenant(connection.db);
  labId = tenant.laboratory_id;
  clientId = tenant.client_id;
  programId = tenant.programs.find((p) => p.environment === 'sandbox')!.program_id;
  [{ id: itemId }] = await connection.sql<{ id: string }[]>`select id from catalog_items where program_id = ${programId} limit 1`;
}, 120_000);

afterAll(async () => {
  for (const watch of watches) await watch.close();
  await connection?.close();
  await database?.drop();
});

describe('online encryption-key rotation', () => {
  it('before any rotation, writes the v1 form the previous release reads, labelled version 1 by the trigger', async () => {
    const p = await watchingProtector();
    expect(p.currentKeyVersion).toBe(1);
    const sealed = p.encrypt({ patient: 'A' });
    expect(sealed).toMatch(/^v1\.[^.]+\.[^.]+\.[^.]+$/);
    // What the previous release's protector (no keyring) reads.
    expect(protector().decrypt(sealed)).toEqual({ patient: 'A' });
    const id = await insertOrder(sealed);
    expect((await storedOf(id)).key_version).toBe(1);
    expect((await storedOf(await insertOrder(null))).key_version).toBeNull();
  });

  it('a process started before the rotation writes with the new version once rotated, and reads both', async () => {
    const before = await watchingProtector();
    const old = before.encrypt({ n: 'old' });
    const started = performance.now();
    const { version, previous } = await rotateEncryptionKey(connection.sql, protector());
    expect(previous).toBe(1);
    expect(version).toBe(2);
    await vi.waitFor(() => expect(before.currentKeyVersion).toBe(2), { timeout: 5000, interval: 10 });
    const lagMs = performance.now() - started;
    console.log(`key rotation heard by a running process after ${lagMs.toFixed(1)} ms (NOTIFY)`);
    const sealed = before.encrypt({ n: 'new' });
    expect(sealed.startsWith('v2.2.')).toBe(true);
    expect(keyVersionOf(sealed)).toBe(2);
    expect(before.decrypt(sealed)).toEqual({ n: 'new' });
    expect(before.decrypt(old)).toEqual({ n: 'old' });
    // The trigger labels the row from the text itself.
    expect((await storedOf(await insertOrder(sealed))).key_version).toBe(2);
    // A process that has not loaded the keyring cannot read it, but `open` reloads once.
    const fresh = protector();
    expect(() => fresh.decrypt(sealed)).toThrow(/version 2/);
    watches.push(await watchKeyring(connection.sql, fresh));
    expect(await fresh.open(sealed)).toEqual({ n: 'new' });
    // Another master key cannot unwrap the keyring, and says why.
    await expect(rotateEncryptionKey(connection.sql, new DataProtector(randomBytes(32)))).rejects.toThrow(/another master key/);
  });

  it('retire refuses the current version, versions in use (naming the counts), and unknown ones', async () => {
    await expect(retireEncryptionKey(connection.sql, 2)).rejects.toThrow(/key version 2 is the current key/);
    const refused = (await retireEncryptionKey(connection.sql, 1).catch((error: unknown) => error)) as Error;
    expect(refused).toBeInstanceOf(KeyRotationRefused);
    expect(refused.message).toMatch(/^key version 1 is still needed by orders [1-9][0-9]*, webhook_subscriptions 0 row\(s\)/);
    await expect(retireEncryptionKey(connection.sql, 9)).rejects.toThrow(/no key version 9/);
  });

  it('re-encrypts old rows in batches without overwriting a newer value written meanwhile, skipping what it cannot read', async () => {
    const old = protector(); // the previous release: no keyring, writes v1 after the rotation too
    const values = Array.from({ length: 25 }, (_, i) => ({ patient: `P${i}` }));
    const ids = [];
    for (const value of values) ids.push(await insertOrder(old.encrypt(value)));
    // Rows from before the keyring's migration: no label yet.
    const unlabelled = await insertOrder(old.encrypt({ patient: 'legacy' }));
    await connection.sql`alter table orders disable trigger orders_key_version`;
    await connection.sql`update orders set key_version = null where id = ${unlabelled}`;
    await connection.sql`alter table orders enable trigger orders_key_version`;
    // A row a laboratory transaction holds while it writes a newer value, sealed by a process
    // that has not heard of the rotation yet (v1): the job skips it, then moves the newer value.
    const contested = ids[3];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const other = connection.sql.begin(async (tx) => {
      await tx`select 1 from orders where id = ${contested} for no key update`;
      locked();
      await held;
      await tx`update orders set protected_data = ${old.encrypt({ patient: 'newer' })} where id = ${contested}`;
    });
    await lockTaken;
    const garbage = await insertOrder('not-a-sealed-value');
    const job = await watchingProtector();
    const batches: number[] = [];
    const first = await reencryptAll(connection.sql, job, { batchSize: 4, onBatch: (b) => batches.push(b.rows) });
    // Batches of at most 4 rows; the held row skipped and left as it was, the garbage reported.
    expect(Math.max(...batches)).toBeLessThanOrEqual(4);
    expect(first.reencrypted).toBe(26); // 24 of these, the unlabelled one, and the first test's
    expect(first.unreadable).toBe(1);
    expect((await storedOf(contested)).key_version).toBe(1);
    expect(old.decrypt((await storedOf(contested)).protected_data)).toEqual(values[3]);
    expect((await encryptionStatus(connection.sql)).job.done_at).toBeNull();
    release();
    await other;
    // The next run takes the newer value the laboratory's transaction wrote.
    await connection.sql`delete from orders where id = ${garbage}`;
    expect((await reencryptAll(connection.sql, job, { batchSize: 4 })).reencrypted).toBe(1);
    const reader = await watchingProtector();
    for (const [i, id] of ids.entries()) {
      const row = await storedOf(id);
      expect(row.key_version).toBe(2);
      expect(row.protected_data.startsWith('v2.2.')).toBe(true);
      // Exactly one layer of encryption: the value itself, never a ciphertext of a ciphertext.
      expect(reader.decrypt(row.protected_data)).toEqual(id === contested ? { patient: 'newer' } : values[i]);
    }
    expect(reader.decrypt((await storedOf(unlabelled)).protected_data)).toEqual({ patient: 'legacy' });
    const status = await encryptionStatus(connection.sql);
    expect(status.current_version).toBe(2);
    expect(status.versions.find((v) => v.version === 1)!.rows.orders).toBe(0);
    expect(status.job.remaining).toEqual({ orders: 0, webhook_subscriptions: 0 });
    expect(status.job.reencrypted_rows).toBeGreaterThanOrEqual(27);
    expect(status.job.done_at).not.toBeNull();
  });

  it('a write with the old version in flight holds off its retirement; after it commits, retirement is refused; then allowed once re-encrypted', async () => {
    const lagging = protector(); // has not heard of the rotation: writes v1
    let commit!: () => void;
    const go = new Promise<void>((resolve) => (commit = resolve));
    let written!: (id: string) => void;
    const wrote = new Promise<string>((resolve) => (written = resolve));
    const writer = connection.sql.begin(async (tx) => {
      written(await insertOrder(lagging.encrypt({ patient: 'late' }), tx as never));
      await go;
    });
    const id = await wrote;
    let settled = false;
    const retiring = retireEncryptionKey(connection.sql, 1).then(
      () => 'retired',
      (error: Error) => error,
    );
    void retiring.finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Its count saw nothing committed; its delete waits for the writer's key-share lock.
    expect(settled).toBe(false);
    commit();
    await writer;
    const outcome = await retiring;
    expect(outcome).toBeInstanceOf(KeyRotationRefused);
    expect((outcome as Error).message).toMatch(/key version 1 is still needed by orders 1, webhook_subscriptions 0 row/);
    expect((await storedOf(id)).key_version).toBe(1);

    await reencryptAll(connection.sql, await watchingProtector());
    expect(await retireEncryptionKey(connection.sql, 1)).toEqual({ version: 1, current_version: 2 });
    expect((await readKeyring(connection.sql))!.map((k) => k.version)).toEqual([2]);
    // A process still writing with the retired version cannot leave an unreadable row behind.
    await expect(insertOrder(lagging.encrypt({ patient: 'too late' }))).rejects.toMatchObject({ code: '23503' });
  });

  it('a second rotation: rows move on to version 3, version 2 is retired once none needs it', async () => {
    const { version } = await rotateEncryptionKey(connection.sql, protector());
    expect(version).toBe(3);
    const p = await watchingProtector();
    expect(p.currentKeyVersion).toBe(3);
    await expect(retireEncryptionKey(connection.sql, 2)).rejects.toThrow(/key version 2 is still needed by orders [1-9]/);
    const status = await encryptionStatus(connection.sql);
    expect(status.job.remaining.orders).toBeGreaterThan(0);
    expect(status.job.done_at).toBeNull();
    await reencryptAll(connection.sql, p);
    expect((await encryptionStatus(connection.sql)).job.remaining.orders).toBe(0);
    await retireEncryptionKey(connection.sql, 2);
    await vi.waitFor(() => expect(p.keyVersions).toEqual([1, 3]), { timeout: 5000, interval: 10 });
  });
});

describe('the code on the schema before the keyring (a rollback, or replicas started before the migration)', () => {
  it('reads no keyring and keeps writing v1', async () => {
    const { folder, remove } = await migrationsFolderOf({ upTo: '0024_partition_sandbox_request_log' });
    const before = await createTestDatabase(serverUrl(), 'keyringbefore', { migrated: false });
    try {
      await runMigrations(before.url, { folder });
      const c = connectDatabase(before.url, { max: 2 });
      try {
        expect(await readKeyring(c.sql)).toBeUndefined();
        const p = protector();
        const watch = await watchKeyring(c.sql, p);
        expect(p.encrypt({ a: 1 })).toMatch(/^v1\./);
        await watch.close();
      } finally {
        await c.close();
      }
    } finally {
      await before.drop();
      await remove();
    }
  }, 120_000);
});
