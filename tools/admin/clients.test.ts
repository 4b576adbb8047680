import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtures } from '@lop/testing';
import { admin, openTestDatabase } from './testing/run-admin';
import { expectFailure, expectUsageError } from './testing/expect-error';

const database = openTestDatabase();
afterAll(() => database.close());

let laboratoryId: string;

beforeAll(async () => {
  laboratoryId = (await fixtures(database.db).demo()).laboratory_id;
});

describe('admin clients', () => {
  it('creates an API client in a laboratory and lists it', async () => {
    const name = `Acme Health ${randomUUID().slice(0, 8)}`;
    const created = await admin('clients', 'create', '--laboratory', laboratoryId, '--name', name, '--json');
    expect(created.code, created.stderr).toBe(0);
    const client = created.json();
    expect(client).toEqual({ client_id: expect.stringMatching(/^[0-9a-f-]{36}$/), laboratory_id: laboratoryId, name, status: 'active' });

    const [listed, readable] = await Promise.all([
      admin('clients', 'list', '--laboratory', laboratoryId, '--json'),
      admin('clients', 'list', '--laboratory', laboratoryId),
    ]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json()).toContainEqual(client);
    expect(readable.stdout).toContain(client.client_id);
    expect(readable.stdout).toContain(name);
  });

  it('lists nothing, readably, for a laboratory without clients', async () => {
    const run = await admin('clients', 'list', '--laboratory', randomUUID());
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('No API clients.');
  });

  it('refuses a malformed laboratory id, an empty, missing or control-character name as usage errors, and an unknown laboratory as a failure', async () => {
    const unknown = randomUUID();
    const [malformed, empty, missing, absent, control] = await Promise.all([
      admin('clients', 'create', '--laboratory', 'lab-1', '--name', 'Acme'),
      admin('clients', 'create', '--laboratory', laboratoryId, '--name', '  '),
      admin('clients', 'create', '--laboratory', laboratoryId),
      admin('clients', 'create', '--laboratory', unknown, '--name', 'Acme', '--json'),
      admin('clients', 'create', '--laboratory', laboratoryId, '--name', 'Acme\u001b[2J'),
    ]);
    expectUsageError(malformed, /--laboratory.*expected a uuid/);
    expectUsageError(empty, /--name.*empty/);
    expectUsageError(control, /--name.*control character/);
    expectUsageError(missing, /required option '--name/);
    expectFailure(absent, new RegExp(`^error: no laboratory ${unknown}$`, 'm'));
  });
});
