import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { DataProtector, loadKeyring, sealAuditTrail, verifyAuditTrail } from '@lop/domain';
import { testDatabaseUrl } from '@lop/testing';
import { expectUsageError } from './testing/expect-error';
import { adminWithEnvironment } from './testing/run-admin';

// Its own database: a rotation is global to a database, and the other admin tests seal with v1.
const ENCRYPTION_KEY = randomBytes(32).toString('base64');
let database: TestDatabase;
let connection: DatabaseConnection;
const encryption = (...args: string[]) => adminWithEnvironment({ DATABASE_URL: database.url, PARTNER_ENCRYPTION_KEY: ENCRYPTION_KEY }, 'encryption', ...args);

beforeAll(async () => {
  database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'adminencryption');
  connection = connectDatabase(database.url, { max: 2 });
}, 120_000);
afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

describe('admin encryption', () => {
  it('status, rotate, retire: refusals are usage errors that say what to do', async () => {
    const before = await encryption('status', '--json');
    expect(before.code, before.stderr).toBe(0);
    expect(before.json()).toMatchObject({ current_version: 1, versions: [{ version: 1, current: true, rows: { orders: 0, webhook_subscriptions: 0 } }] });

    expectUsageError(await encryption('retire', '1'), /key version 1 is the current key: new writes use it\. Rotate first/);
    expectUsageError(await encryption('retire', 'one'), /expected a key version/);
    expectUsageError(await encryption('retire', '0x2'), /expected a key version/);

    const rotated = await adminWithEnvironment({ DATABASE_URL: database.url, PARTNER_ENCRYPTION_KEY: ENCRYPTION_KEY }, '--operator', 'erin@lab', 'encryption', 'rotate');
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toMatch(/^Added key version 2; new writes use it\. .*admin encryption retire 1`\.\n$/);
    // The key is stored wrapped: unreadable without the master key, readable with it.
    const [row] = await connection.sql<{ wrapped_key: string }[]>`select wrapped_key from encryption_keys where version = 2`;
    expect(row.wrapped_key).toMatch(/^w1\./);
    const holder = new DataProtector(Buffer.from(ENCRYPTION_KEY, 'base64'));
    await loadKeyring(connection.sql, holder);
    expect(holder.currentKeyVersion).toBe(2);
    await expect(loadKeyring(connection.sql, new DataProtector(randomBytes(32)))).rejects.toThrow(/wrapped under another master key/);

    const wrongKey = await adminWithEnvironment({ DATABASE_URL: database.url, PARTNER_ENCRYPTION_KEY: randomBytes(32).toString('base64') }, 'encryption', 'rotate');
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/another master key/);

    expectUsageError(await encryption('retire', '7'), /no key version 7 in the keyring \(never added, or already retired\); versions: 1, 2/);
    const retired = await adminWithEnvironment({ DATABASE_URL: database.url, PARTNER_ENCRYPTION_KEY: ENCRYPTION_KEY }, '--operator', 'erin@lab', 'encryption', 'retire', '1');
    expect(retired.code, retired.stderr).toBe(0);
    expect(retired.stdout).toBe('Retired key version 1; the current version is 2.\n');
    const after = await encryption('status');
    expect(after.stdout).toMatch(/^Current key version: 2\n/);
    expect(after.stdout).not.toMatch(/^1 /m);

    // Each change is in the audit trail with its operator, committed with it; refusals left none.
    const audited = await connection.sql`select action, actor, door, resource_id, details from audit_records where action like 'encryption.%' order by id`;
    expect(audited).toEqual([
      { action: 'encryption.rotate', actor: 'operator:erin@lab', door: 'admin', resource_id: 'key-version:2', details: { version: 2, current_version: 2 } },
      { action: 'encryption.retire', actor: 'operator:erin@lab', door: 'admin', resource_id: 'key-version:1', details: { version: 1, current_version: 2 } },
    ]);
    // Written by another path than drizzle's transactions (the keyring's postgres.js one): they seal and verify like every record.
    expect((await sealAuditTrail(connection.sql, { marginSeconds: 0, now: new Date(Date.now() + 1000) })).sealed).toBeGreaterThanOrEqual(2);
    expect(await verifyAuditTrail(connection.sql, { marginSeconds: 600 })).toMatchObject({ ok: true, problems: [] });
  }, 120_000);
});
