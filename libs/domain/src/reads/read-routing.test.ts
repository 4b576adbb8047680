import { describe, expect, it } from 'vitest';
import type { Database, Sql } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { PartnerError } from '../http/errors';
import { readThroughReplicas, type ReplicaChooser } from './read-routing';
import type { ReadRoute, Replica } from './replica-set';

const caller = (readPosition: number | undefined): Caller => ({
  keyId: 'key',
  keyPrefix: 'lop_test_AbCd',
  clientId: '00000000-0000-4000-8000-000000000001',
  laboratoryId: '00000000-0000-4000-8000-000000000002',
  environment: 'sandbox',
  scopes: new Set(),
  readPosition,
});

/** A replica whose copy of the caller's stream counter is `replayed` (or whose lookup throws `fails`). */
function replica(name: string, replayed: number, fails?: Error): Replica {
  const sql = (async () => {
    if (fails) throw fails;
    return [{ last_sequence: String(replayed) }];
  }) as unknown as Sql;
  return { name, sql, db: {} as Database };
}

function chooser(candidates: Replica[]) {
  const routes: ReadRoute[] = [];
  const down: string[] = [];
  const set: ReplicaChooser = { candidates: () => candidates, markDown: (r) => void down.push(r.name), count: (route) => void routes.push(route) };
  return { set, routes, down };
}

const codeError = (code: string, message = code) => Object.assign(new Error(message), { code });

/** A read that answers with the name of the server it ran on, or fails on the replica with `replicaFailure`. */
const reader =
  (replicaFailure?: unknown) =>
  async (target: Replica | undefined): Promise<{ on: string; error?: unknown }> =>
    target ? (replicaFailure ? { on: target.name, error: replicaFailure } : { on: target.name }) : { on: 'primary' };
const failureOf = (result: { error?: unknown }) => result.error;

describe('readThroughReplicas: which server answers a replica-safe read', () => {
  it('a replica that has replayed the caller stream as far as the primary showed it answers', async () => {
    const { set, routes } = chooser([replica('r1', 7)]);
    expect(await readThroughReplicas(set, caller(7), reader(), failureOf)).toEqual({ on: 'r1' });
    expect(routes).toEqual(['replica']);
  });

  it('read-your-writes: a replica behind the caller stream is passed over for one that is not, or for the primary', async () => {
    const behind = chooser([replica('r1', 6), replica('r2', 9)]);
    expect(await readThroughReplicas(behind.set, caller(7), reader(), failureOf)).toEqual({ on: 'r2' });
    const allBehind = chooser([replica('r1', 6)]);
    expect(await readThroughReplicas(allBehind.set, caller(7), reader(), failureOf)).toEqual({ on: 'primary' });
    expect(allBehind.routes).toEqual(['primary_behind_client']);
  });

  it('no replica up, or a caller whose position is unknown: the primary', async () => {
    const none = chooser([]);
    expect(await readThroughReplicas(none.set, caller(0), reader(), failureOf)).toEqual({ on: 'primary' });
    expect(none.routes).toEqual(['primary_no_replica']);
    const unknown = chooser([replica('r1', 100)]);
    expect(await readThroughReplicas(unknown.set, caller(undefined), reader(), failureOf)).toEqual({ on: 'primary' });
  });

  it('a replica unreachable at the check is marked down and the read goes on elsewhere', async () => {
    const { set, down } = chooser([replica('r1', 0, codeError('ECONNREFUSED')), replica('r2', 0)]);
    expect(await readThroughReplicas(set, caller(0), reader(), failureOf)).toEqual({ on: 'r2' });
    expect(down).toEqual(['r1']);
  });

  it.each([
    ['a recovery conflict', codeError('40001', 'canceling statement due to conflict with recovery'), false],
    ['a buffer-pin deadlock with recovery', codeError('40P01'), false],
    ['a statement timeout on the replica', codeError('57014'), false],
    ['a write attempted on a standby', codeError('25006'), false],
    ['a column a migration added that the replica has not replayed yet', codeError('42703'), false],
    ['a connection the replica dropped', codeError('CONNECTION_CLOSED'), true],
    ['an administrator shutdown', codeError('57P01'), true],
    ['a failure wrapped by the domain', new PartnerError('unavailable', 'x', { cause: codeError('57P01') }), true],
  ])('%s on the replica: the read runs again on the primary', async (_label, failure, marksDown) => {
    const { set, routes, down } = chooser([replica('r1', 0)]);
    expect(await readThroughReplicas(set, caller(0), reader(failure), failureOf)).toEqual({ on: 'primary' });
    expect(routes).toEqual(['primary_after_replica_error']);
    expect(down).toEqual(marksDown ? ['r1'] : []);
  });

  it('a 404 from a replica is asked of the primary before it is answered; other refusals stand', async () => {
    const notFound = chooser([replica('r1', 0)]);
    expect(await readThroughReplicas(notFound.set, caller(0), reader(new PartnerError('not_found', 'No such order.')), failureOf)).toEqual({ on: 'primary' });
    expect(notFound.routes).toEqual(['primary_after_not_found']);
    const invalid = new PartnerError('invalid_request', 'Bad cursor.');
    const refused = chooser([replica('r1', 0)]);
    expect(await readThroughReplicas(refused.set, caller(0), reader(invalid), failureOf)).toEqual({ on: 'r1', error: invalid });
  });
});
