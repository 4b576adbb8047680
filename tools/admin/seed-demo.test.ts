import { afterAll, describe, expect, it } from 'vitest';
import { authenticate, SCOPES } from '@lop/domain';
import { admin, openTestDatabase } from './testing/run-admin';

const database = openTestDatabase();
afterAll(() => database.close());

describe('admin seed-demo', () => {
  it('is idempotent: the same laboratory and client, no duplicated programs or grants, a new working key each run', async () => {
    const first = await admin('seed-demo', '--json');
    const second = await admin('seed-demo', '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    const a = first.json();
    const b = second.json();

    expect(b.laboratory_id).toBe(a.laboratory_id);
    expect(b.client_id).toBe(a.client_id);
    expect(b.programs).toEqual(a.programs);
    expect(b.sandbox_key).not.toBe(a.sandbox_key);

    const [programs] = await database.sql`select count(*)::int as n from programs where laboratory_id = ${a.laboratory_id}`;
    expect(programs.n).toBe(a.programs.length);
    const [grants] = await database.sql`select count(*)::int as n, count(distinct program_id)::int as distinct_programs from program_grants where client_id = ${a.client_id}`;
    expect(grants.n).toBe(grants.distinct_programs);
    expect(grants.n).toBe(a.programs.length);

    for (const run of [a, b]) {
      expect(run.sandbox_key).toMatch(/^lop_test_[0-9A-Za-z]{32,}$/);
      const caller = await authenticate(database.sql, `Bearer ${run.sandbox_key}`);
      expect(caller).toMatchObject({ keyId: run.sandbox_key_id, clientId: a.client_id, laboratoryId: a.laboratory_id, environment: 'sandbox' });
      expect([...caller.scopes].sort()).toEqual([...SCOPES].sort());
    }
  });

  it('prints the ids and the key readably without --json', async () => {
    const run = await admin('seed-demo');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/laboratory_id\s+[0-9a-f-]{36}/);
    expect(run.stdout).toMatch(/client_id\s+[0-9a-f-]{36}/);
    expect(run.stdout).toMatch(/sandbox_key\s+lop_test_[0-9A-Za-z]{32,}/);
    expect(() => JSON.parse(run.stdout)).toThrow();
  });
});
