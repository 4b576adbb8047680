import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase, type DatabaseConnection } from './client';
import { QUERY_TIMEOUT } from './query-timeouts';

const databaseUrl = inject('databaseUrl');
const TIMEOUTS = { statementSeconds: 0.5, idleInTransactionSeconds: 2, querySeconds: 1 };

/** A relay to the run's PostgreSQL that can stall like a SIGSTOPped server: connections stay up, nothing is answered. */
async function stallableRelay() {
  const target = new URL(databaseUrl);
  const pairs = new Set<[Socket, Socket]>();
  let frozen = false;
  const hold = ([a, b]: [Socket, Socket]) => (a.unpipe(b), b.unpipe(a), a.pause(), b.pause());
  const relay = ([a, b]: [Socket, Socket]) => (a.pipe(b), b.pipe(a));
  const server: Server = createServer((client) => {
    const pair: [Socket, Socket] = [client, connect(Number(target.port || 5432), target.hostname)];
    for (const socket of pair) socket.on('error', () => pair.forEach((s) => s.destroy())).on('close', () => (pair.forEach((s) => s.destroy()), pairs.delete(pair)));
    pairs.add(pair);
    if (frozen) hold(pair);
    else relay(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    connections: () => pairs.size,
    freeze: () => ((frozen = true), pairs.forEach(hold)),
    /** Open connections drop (new ones are still relayed). */
    drop: () => pairs.forEach((pair) => pair.forEach((s) => s.destroy())),
    thaw: () => ((frozen = false), pairs.forEach(relay)),
    close: () => new Promise<void>((resolve) => (pairs.forEach((pair) => pair.forEach((s) => s.destroy())), server.close(() => resolve()))),
  };
}

const elapsed = async (work: () => Promise<unknown>) => {
  const started = Date.now();
  const outcome = await work().then(
    (value) => ({ value, error: undefined as any }),
    (error) => ({ value: undefined, error }),
  );
  return { ...outcome, ms: Date.now() - started };
};
/** drizzle wraps the driver's error ("Failed query: …") with it as the cause. */
const codeOf = (error: unknown): unknown => (error as { code?: unknown })?.code ?? (error as { cause?: { code?: unknown } })?.cause?.code;

let relay: Awaited<ReturnType<typeof stallableRelay>>;
let database: DatabaseConnection;
let fixtures: DatabaseConnection;
const table = `query_timeouts_${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  fixtures = connectDatabase(databaseUrl, { max: 1 });
  await fixtures.sql.unsafe(`create table ${table} (id text primary key)`);
  relay = await stallableRelay();
  database = connectDatabase(relay.url, { max: 2, timeouts: TIMEOUTS });
});
afterAll(async () => {
  relay.thaw();
  // A connection closed in the middle of a query keeps it as current in postgres.js until it
  // reconnects, and end() waits for it until its timeout.
  await database.sql.end({ timeout: 0.5 });
  await relay.close();
  await fixtures.sql.unsafe(`drop table if exists ${table}`);
  await fixtures.close();
});

describe('query timeouts of a request pool', () => {
  it('sets statement_timeout and idle_in_transaction_session_timeout on every connection; other pools keep none', async () => {
    const [settings] = await database.sql`select current_setting('statement_timeout') as statement, current_setting('idle_in_transaction_session_timeout') as idle`;
    expect(settings).toEqual({ statement: '500ms', idle: '2s' });
    const [unbounded] = await fixtures.sql`select current_setting('statement_timeout') as statement`;
    expect(unbounded.statement).toBe('0');
  });

  it('a slow statement is cancelled by the server (57014), well before the client deadline', async () => {
    const { error, ms } = await elapsed(() => database.sql`select pg_sleep(3)`);
    expect(codeOf(error)).toBe('57014');
    expect(ms).toBeLessThan(1_000);
  });

  it('a stalled server: queries and transactions on open connections fail with QUERY_TIMEOUT at the deadline, later ones at once while one probes, nothing is written late, and the pool recovers after the stall', async () => {
    // Both connections open and idle before the stall.
    await Promise.all([database.sql`select pg_sleep(0.05)`, database.sql`select pg_sleep(0.05)`]);
    relay.freeze();
    let continuedAfterTimeout = false;
    const [query, transaction, drizzleQuery] = await Promise.all([
      elapsed(() => database.sql`select 1`),
      elapsed(() =>
        database.sql.begin(async (tx) => {
          await tx.unsafe(`insert into ${table} (id) values ('in-transaction')`);
          continuedAfterTimeout = true;
          await tx.unsafe(`insert into ${table} (id) values ('after-timeout')`);
        }),
      ),
      elapsed(() => database.db.execute(`select 2`)),
    ]);
    for (const outcome of [query, transaction, drizzleQuery]) {
      expect(codeOf(outcome.error), String(outcome.error)).toBe(QUERY_TIMEOUT);
      expect(outcome.ms).toBeGreaterThanOrEqual(950);
      expect(outcome.ms).toBeLessThan(1_600);
    }
    // Until the server answers again one query probes it and the others fail at once.
    const [probe, other] = await Promise.all([elapsed(() => database.sql`select 7`), elapsed(() => database.sql`select 8`)]);
    expect(codeOf(other.error)).toBe(QUERY_TIMEOUT);
    expect(other.ms).toBeLessThan(100);
    // The probe meets the deadline, or the closing of the silent connections first: said as what it is.
    expect(codeOf(probe.error)).toBe(QUERY_TIMEOUT);
    // The stalled connections are closed (after a short grace), so their queued work is dropped.
    await new Promise((resolve) => setTimeout(resolve, 600));
    relay.thaw();
    const recovered = await elapsed(() => database.sql`select 3 as n`);
    expect(recovered.error).toBeUndefined();
    expect(recovered.ms).toBeLessThan(1_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(continuedAfterTimeout).toBe(false);
    expect(await fixtures.sql.unsafe(`select id from ${table}`)).toEqual([]);
  });

  it('a transaction whose BEGIN is stalled never runs its callback, even once the server answers again', async () => {
    relay.freeze();
    let ran = false;
    const outcome = await elapsed(() =>
      database.sql.begin(async (tx) => {
        ran = true;
        await tx.unsafe(`insert into ${table} (id) values ('late')`);
      }),
    );
    expect(codeOf(outcome.error)).toBe(QUERY_TIMEOUT);
    relay.thaw();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(ran).toBe(false);
    expect(await fixtures.sql.unsafe(`select id from ${table}`)).toEqual([]);
    expect((await database.sql`select 4 as n`)[0].n).toBe(4);
  });

  it('a transaction whose connection drops under it ends there: its callback going on afterwards leaves no deadline behind', async () => {
    const outcome = await elapsed(() =>
      database.sql.begin(async (tx) => {
        await tx`select 1`;
        relay.drop();
        await new Promise((resolve) => setTimeout(resolve, 300));
      }),
    );
    expect(codeOf(outcome.error)).toBe('CONNECTION_CLOSED');
    // Past the deadline of a COMMIT that was never to be sent, the pool is not taken for stalled.
    await new Promise((resolve) => setTimeout(resolve, 300 + TIMEOUTS.querySeconds * 1000 + 300));
    const answers = await Promise.all([database.sql`select 10 as n`, database.sql`select 11 as n`]);
    expect(answers.map(([row]) => row.n)).toEqual([10, 11]);
  });

  it('within the limits nothing changes: a statement shorter than the timeout and a transaction succeed', async () => {
    const [slow] = await database.sql`select pg_sleep(0.3), 5 as n`;
    expect(slow.n).toBe(5);
    const rows = await database.sql.begin(async (tx) => {
      await tx`select 1`;
      return tx`select 6 as n`;
    });
    expect(rows[0].n).toBe(6);
  });
});
