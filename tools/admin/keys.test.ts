import { SCOPES } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate, createKey } from '@lop/domain';
import { fixtures } from '@lop/testing';
import { admin, openTestDatabase } from './testing/run-admin';
import { expectFailure, expectUsageError } from './testing/expect-error';

const database = openTestDatabase();
const f = fixtures(database.db);
afterAll(() => database.close());

let clientId: string;

beforeAll(async () => {
  const demo = await f.demo();
  clientId = (await f.client(demo.laboratory_id, 'Key Test Health')).client_id;
});

async function createKeyWithCli(...args: string[]) {
  const run = await admin('keys', 'create', '--client', clientId, ...args, '--json');
  expect(run.code, run.stderr).toBe(0);
  return run.json();
}

describe('admin keys', () => {
  it('creates a production key with exactly the listed scopes and no expiry', async () => {
    const key = await createKeyWithCli('--environment', 'production', '--scopes', 'orders:read, results:read,orders:read');
    expect(key).toMatchObject({ client_id: clientId, environment: 'production', scopes: ['orders:read', 'results:read'], expires_at: null });
    expect(key.key).toMatch(/^lop_live_[0-9A-Za-z]{32,}$/);
    const caller = await authenticate(database.sql, `Bearer ${key.key}`);
    expect(caller).toMatchObject({ keyId: key.key_id, clientId, environment: 'production' });
    expect([...caller.scopes].sort()).toEqual(['orders:read', 'results:read']);
  });

  it('creates a sandbox key with all scopes that expires after the given duration', async () => {
    const before = Date.now();
    const key = await createKeyWithCli('--environment', 'sandbox', '--scopes', 'all', '--expires-in', '7d');
    expect(key.key).toMatch(/^lop_test_[0-9A-Za-z]{32,}$/);
    expect(key.scopes).toEqual([...SCOPES]);
    const week = 7 * 86_400_000;
    expect(Date.parse(key.expires_at)).toBeGreaterThanOrEqual(before + week);
    expect(Date.parse(key.expires_at)).toBeLessThanOrEqual(Date.now() + week);
  });

  it('lists keys with their status, and revoking a key refuses it at once', async () => {
    // Creating keys through the CLI is covered above; these only need to exist.
    const direct = (expiresAt?: Date) => createKey(database.db, { clientId, environment: 'sandbox', scopes: ['catalog:read'], expiresAt });
    const [kept, revoked, expired] = await Promise.all([direct(), direct(), direct(new Date(Date.now() - 60_000))]);

    const revoke = await admin('keys', 'revoke', revoked.key_id, '--json');
    expect(revoke.code, revoke.stderr).toBe(0);
    expect(revoke.json()).toEqual({ key_id: revoked.key_id, revoked_at: expect.any(String) });
    await expect(authenticate(database.sql, `Bearer ${revoked.key}`)).rejects.toThrow(/revoked/);

    const [listed, readable] = await Promise.all([admin('keys', 'list', '--client', clientId, '--json'), admin('keys', 'list', '--client', clientId)]);
    expect(listed.code, listed.stderr).toBe(0);
    const status = Object.fromEntries(listed.json().map((k: { key_id: string; status: string }) => [k.key_id, k.status]));
    expect(status).toMatchObject({ [kept.key_id]: 'active', [revoked.key_id]: 'revoked', [expired.key_id]: 'expired' });

    expect(readable.code).toBe(0);
    const line = (id: string) => readable.stdout.split('\n').find((l) => l.startsWith(id)) ?? '';
    expect(line(kept.key_id)).toMatch(/\bactive\b/);
    expect(line(revoked.key_id)).toMatch(/\brevoked\b/);
    expect(line(expired.key_id)).toMatch(/\bexpired\b/);
    // The list never shows key text, only the recognisable prefix.
    expect(readable.stdout).not.toContain(kept.key);
  });

  it('refuses unknown scopes, bad durations, unknown environments and malformed ids as usage errors', async () => {
    const create = (...args: string[]) => admin('keys', 'create', '--client', clientId, ...args);
    const [scope, duration, environment, keyId] = await Promise.all([
      create('--environment', 'sandbox', '--scopes', 'orders:read,orders:delete'),
      create('--environment', 'sandbox', '--scopes', 'all', '--expires-in', '5x'),
      create('--environment', 'live', '--scopes', 'all'),
      admin('keys', 'revoke', 'lop_test_abc'),
    ]);
    expectUsageError(scope, /--scopes.*unknown scope\(s\): orders:delete/);
    expectUsageError(duration, /--expires-in.*"5x" is not a duration/);
    expectUsageError(environment, /--environment.*Allowed choices are sandbox, production/);
    expectUsageError(keyId, /key_id.*expected a uuid/);
  });

  it('fails with one line, and nothing on stdout even with --json, for a key that does not exist', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    expectFailure(await admin('keys', 'revoke', unknown, '--json'), new RegExp(`^error: no API key ${unknown}$`, 'm'));
  });
});
