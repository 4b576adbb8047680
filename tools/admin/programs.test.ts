import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoSeedResult } from '@lop/domain';
import { fixtures } from '@lop/testing';
import { admin, openTestDatabase } from './testing/run-admin';
import { expectFailure, expectUsageError } from './testing/expect-error';

const database = openTestDatabase();
const f = fixtures(database.db);
afterAll(() => database.close());

let demo: DemoSeedResult;
const newClient = async () => (await f.client(demo.laboratory_id, 'Grant Test Health')).client_id;

async function grantedProgramIds(clientId: string, environment: string): Promise<string[]> {
  const rows = await database.sql<{ program_id: string }[]>`
    select program_id from program_grants where client_id = ${clientId} and environment = ${environment} order by program_id`;
  return rows.map((r) => r.program_id);
}

beforeAll(async () => {
  demo = await f.demo();
});

describe('admin programs grant', () => {
  it('--all grants every program of the laboratory in that environment only, and granting again changes nothing', async () => {
    const clientId = await newClient();
    const sandbox = demo.programs.filter((p) => p.environment === 'sandbox').map((p) => p.program_id).sort();

    const first = await admin('programs', 'grant', '--client', clientId, '--all', '--environment', 'sandbox', '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(first.json()).toMatchObject({ client_id: clientId, environment: 'sandbox' });
    expect(first.json().granted.map((g: { program_id: string }) => g.program_id).sort()).toEqual(sandbox);

    const again = await admin('programs', 'grant', '--client', clientId, '--all', '--environment', 'sandbox');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`Granted ${sandbox.length} sandbox program(s)`);

    expect(await grantedProgramIds(clientId, 'sandbox')).toEqual(sandbox);
    expect(await grantedProgramIds(clientId, 'production')).toEqual([]);
  });

  it('--program grants one program of the chosen environment and refuses one of the other environment', async () => {
    const clientId = await newClient();
    const production = demo.programs.find((p) => p.environment === 'production')!;
    const [granted, refused] = await Promise.all([
      admin('programs', 'grant', '--client', clientId, '--program', production.program_id, '--environment', 'production', '--json'),
      admin('programs', 'grant', '--client', clientId, '--program', production.program_id, '--environment', 'sandbox'),
    ]);
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.json().granted).toEqual([{ program_id: production.program_id, name: production.name }]);
    expectFailure(refused, /is not a sandbox program of the client's laboratory/);
    expect(await grantedProgramIds(clientId, 'production')).toEqual([production.program_id]);
    expect(await grantedProgramIds(clientId, 'sandbox')).toEqual([]);
  });

  it('needs exactly one of --program and --all, and an existing, well-formed client id', async () => {
    const [program] = demo.programs;
    const client = '00000000-0000-4000-8000-000000000000';
    const grant = (...args: string[]) => admin('programs', 'grant', ...args);
    const [neither, both, malformed, unknown] = await Promise.all([
      grant('--client', client, '--environment', 'sandbox'),
      grant('--client', client, '--environment', 'sandbox', '--all', '--program', program.program_id),
      grant('--client', 'client-1', '--environment', 'sandbox', '--all'),
      grant('--client', client, '--environment', 'sandbox', '--all'),
    ]);
    expectUsageError(neither, /exactly one of --program <id> or --all/);
    expectUsageError(both, /exactly one of --program <id> or --all/);
    expectUsageError(malformed, /--client.*expected a uuid/);
    expectFailure(unknown, new RegExp(`no API client ${client}`));
  });
});

describe('admin programs revoke', () => {
  it('--program withdraws one program in that environment; revoking again is harmless; grant restores it', async () => {
    const clientId = await newClient();
    const sandbox = demo.programs.filter((p) => p.environment === 'sandbox');
    expect((await admin('programs', 'grant', '--client', clientId, '--all', '--environment', 'sandbox')).code).toBe(0);
    const [gone, ...kept] = sandbox;

    const revoked = await admin('programs', 'revoke', '--client', clientId, '--program', gone.program_id, '--environment', 'sandbox', '--json');
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.json()).toEqual({ client_id: clientId, environment: 'sandbox', revoked: [{ program_id: gone.program_id, name: gone.name }] });
    expect(await grantedProgramIds(clientId, 'sandbox')).toEqual(kept.map((p) => p.program_id).sort());

    const again = await admin('programs', 'revoke', '--client', clientId, '--program', gone.program_id, '--environment', 'sandbox');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('Revoked 0 sandbox program(s)');
    // Another environment's grant of the same id is not touched (there is none): the environment is part of the grant.
    expect((await admin('programs', 'revoke', '--client', clientId, '--program', kept[0].program_id, '--environment', 'production', '--json')).json().revoked).toEqual([]);
    expect(await grantedProgramIds(clientId, 'sandbox')).toEqual(kept.map((p) => p.program_id).sort());

    expect((await admin('programs', 'grant', '--client', clientId, '--program', gone.program_id, '--environment', 'sandbox')).code).toBe(0);
    expect(await grantedProgramIds(clientId, 'sandbox')).toEqual(sandbox.map((p) => p.program_id).sort());
  });

  it('--all withdraws every program of that environment only', async () => {
    const clientId = await newClient();
    for (const environment of ['sandbox', 'production']) expect((await admin('programs', 'grant', '--client', clientId, '--all', '--environment', environment)).code).toBe(0);
    const production = await grantedProgramIds(clientId, 'production');
    const revoked = await admin('programs', 'revoke', '--client', clientId, '--all', '--environment', 'sandbox', '--json');
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.json().revoked.map((p: { program_id: string }) => p.program_id).sort()).toEqual(demo.programs.filter((p) => p.environment === 'sandbox').map((p) => p.program_id).sort());
    expect(await grantedProgramIds(clientId, 'sandbox')).toEqual([]);
    expect(await grantedProgramIds(clientId, 'production')).toEqual(production);
  });

  it('needs exactly one of --program and --all, and an existing client', async () => {
    const client = '00000000-0000-4000-8000-000000000000';
    const [neither, unknown] = await Promise.all([
      admin('programs', 'revoke', '--client', client, '--environment', 'sandbox'),
      admin('programs', 'revoke', '--client', client, '--environment', 'sandbox', '--all'),
    ]);
    expectUsageError(neither, /exactly one of --program <id> or --all/);
    expectFailure(unknown, new RegExp(`no API client ${client}`));
  });
});
