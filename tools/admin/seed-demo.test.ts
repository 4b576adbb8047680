import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCOPES } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { authenticate, bannerKeyFile } from '@lop/domain';
import { testDatabaseUrl } from '@lop/testing';
import { adminWithEnvironment } from './testing/run-admin';

// A database and data folder of this file's own: the banner key is one per database, and another
// file rotating it in the shared test database would pull it from under these assertions.
let database: TestDatabase;
let connection: DatabaseConnection;
const dataDirs: string[] = [];
const newDataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'lop-seed-demo-'));
  dataDirs.push(dir);
  return dir;
};
let dataDir: string;

beforeAll(async () => {
  database = await createTestDatabase(testDatabaseUrl(), 'seeddemo');
  connection = connectDatabase(database.url, { max: 2, applicationName: 'seed-demo-test' });
  dataDir = newDataDir();
});
afterAll(async () => {
  await connection?.close();
  await database?.drop();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

const seedDemo = (...args: string[]) => adminWithEnvironment({ DATABASE_URL: database.url, PARTNER_DATA_DIR: dataDir }, 'seed-demo', ...args);

async function seeded(...args: string[]) {
  const run = await seedDemo(...args, '--json');
  expect(run.code, run.stderr).toBe(0);
  return run.json();
}

/** What authentication says about a key now: 'ok' or the reason it is refused. */
async function keyState(key: string): Promise<string> {
  return authenticate(connection.sql, `Bearer ${key}`).then(
    () => 'ok',
    (error: Error) => error.message,
  );
}

const activeBannerKeys = async (clientId: string) =>
  (await connection.sql<{ n: number }[]>`select count(*)::int as n from api_keys where client_id = ${clientId} and purpose = 'demo_banner' and revoked_at is null`)[0].n;

const modeOf = (file: string) => statSync(file).mode & 0o777;

describe('admin seed-demo', () => {
  it('is idempotent: the same laboratory, client, programs and grants, and the same working key each run', async () => {
    const a = await seeded();
    const b = await seeded();

    expect(b.laboratory_id).toBe(a.laboratory_id);
    expect(b.client_id).toBe(a.client_id);
    expect(b.programs).toEqual(a.programs);
    expect([a.sandbox_key_status, b.sandbox_key_status]).toEqual(['created', 'reused']);
    expect(b.sandbox_key).toBe(a.sandbox_key);
    expect(b.sandbox_key_id).toBe(a.sandbox_key_id);

    const [programs] = await connection.sql`select count(*)::int as n from programs where laboratory_id = ${a.laboratory_id}`;
    expect(programs.n).toBe(a.programs.length);
    const [grants] = await connection.sql`select count(*)::int as n, count(distinct program_id)::int as distinct_programs from program_grants where client_id = ${a.client_id}`;
    expect(grants.n).toBe(grants.distinct_programs);
    expect(grants.n).toBe(a.programs.length);

    expect(a.sandbox_key).toMatch(/^lop_test_[0-9A-Za-z]{32,}$/);
    const caller = await authenticate(connection.sql, `Bearer ${a.sandbox_key}`);
    expect(caller).toMatchObject({ keyId: a.sandbox_key_id, clientId: a.client_id, laboratoryId: a.laboratory_id, environment: 'sandbox' });
    expect([...caller.scopes].sort()).toEqual([...SCOPES].sort());
    expect(await activeBannerKeys(a.client_id)).toBe(1);
  }, 90_000);

  it('keeps the key text only in the data folder, mode 0600, and tightens a copy others could read', async () => {
    const { sandbox_key: key, sandbox_key_file: file } = await seeded();
    expect(file).toBe(bannerKeyFile(dataDir));
    expect(file.startsWith(`${dataDir}/`)).toBe(true);
    expect(modeOf(file)).toBe(0o600);
    chmodSync(file, 0o644);
    const again = await seeded();
    expect(again).toMatchObject({ sandbox_key: key, sandbox_key_status: 'reused' });
    expect(modeOf(file)).toBe(0o600);
  }, 90_000);

  it('after many runs exactly one banner key works, and keys an administrator created are untouched', async () => {
    const first = await seeded();
    const clientId: string = first.client_id;
    // An administrator's key for the demo client, made the way an administrator makes one.
    const made = await adminWithEnvironment({ DATABASE_URL: database.url }, 'keys', 'create', '--client', clientId, '--environment', 'sandbox', '--scopes', 'all', '--json');
    expect(made.code, made.stderr).toBe(0);
    const administratorKey: string = made.json().key;

    const printed: { key: string; status: string }[] = [];
    const record = (result: { sandbox_key: string; sandbox_key_status: string }) => printed.push({ key: result.sandbox_key, status: result.sandbox_key_status });
    record(await seeded());
    record(await seeded('--new-key'));
    record(await seeded());
    rmSync(bannerKeyFile(dataDir));
    record(await seeded());
    dataDir = newDataDir();
    record(await seeded());
    record(await seeded());

    expect(printed.map((p) => p.status)).toEqual(['reused', 'replaced', 'reused', 'replaced', 'replaced', 'reused']);
    const distinct = [...new Set([first.sandbox_key, ...printed.map((p) => p.key)])];
    expect(distinct).toHaveLength(4);
    const current = printed.at(-1)!.key;
    for (const key of distinct) expect(await keyState(key), key === current ? 'the current banner key' : 'an earlier banner key').toBe(key === current ? 'ok' : 'The API key has been revoked.');
    expect(await activeBannerKeys(clientId)).toBe(1);
    expect(await keyState(administratorKey)).toBe('ok');

    const listed = await adminWithEnvironment({ DATABASE_URL: database.url }, 'keys', 'list', '--client', clientId, '--json');
    expect(listed.code, listed.stderr).toBe(0);
    const keys: { purpose: string | null; status: string }[] = listed.json();
    expect(keys.filter((k) => k.purpose === 'demo_banner' && k.status === 'active')).toHaveLength(1);
    expect(keys.filter((k) => k.purpose === null && k.status === 'active')).toHaveLength(1);
  }, 180_000);

  it('prints the ids and the key readably without --json, saying it is the same key as before', async () => {
    const run = await seedDemo();
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/laboratory_id\s+[0-9a-f-]{36}/);
    expect(run.stdout).toMatch(/client_id\s+[0-9a-f-]{36}/);
    expect(run.stdout).toMatch(/sandbox_key\s+lop_test_[0-9A-Za-z]{32,}\s+\(all scopes; the same key as last start, kept in /);
    expect(() => JSON.parse(run.stdout)).toThrow();
  });
});
