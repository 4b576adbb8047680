import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { readMigrations, runMigrations, schemaVerdict } from './migrate';
import { createTestDatabase, migrationsFolderOf, withDatabase } from './test-database';

const runDatabaseUrl = inject('databaseUrl');
const serverUrl = withDatabase(runDatabaseUrl, 'postgres');
const made: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  for (const database of made) await database.drop();
});

describe('migrations', () => {
  it('the run database is fully migrated: this release serves it and nothing is pending', async () => {
    const sql = postgres(runDatabaseUrl, { max: 1, onnotice: () => undefined });
    try {
      expect(await schemaVerdict(sql)).toEqual({ servable: true, pending: [] });
    } finally {
      await sql.end();
    }
  });

  it('an empty database is refused with one sentence saying what to run, and served after migrating', async () => {
    const { url, drop } = await createTestDatabase(serverUrl, 'empty', { migrated: false });
    made.push({ drop });
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      const before = await schemaVerdict(sql);
      expect(before).toMatchObject({ servable: false, reason: 'behind' });
      expect(before.servable ? '' : before.sentence).toBe('The database has no schema yet: run `npm run migrate` (or `npm run admin -- migrate`) with this release before starting it.');
      const run = await runMigrations(url);
      expect(run.applied).toEqual(readMigrations().map((migration) => migration.tag));
      expect(await schemaVerdict(sql)).toEqual({ servable: true, pending: [] });
    } finally {
      await sql.end();
    }
  });

  it('replicas starting at once migrate safely: concurrent runs serialise on an advisory lock', async () => {
    const { url, drop } = await createTestDatabase(serverUrl, 'concurrent', { migrated: false });
    made.push({ drop });
    const runs = await Promise.all([runMigrations(url), runMigrations(url), runMigrations(url)]);
    // Each migration applied once, by whichever run took the lock first.
    expect(runs.flatMap((run) => run.applied).sort()).toEqual(readMigrations().map((migration) => migration.tag));
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
      expect(n).toBe(readMigrations().length);
    } finally {
      await sql.end();
    }
  });

  it('0012 turns the delivery state and attempt outcome into enums in place: rows keep their values, the partial indexes still serve', async () => {
    const { url, drop } = await createTestDatabase(serverUrl, 'enum', { migrated: false });
    made.push({ drop });
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    // The committed migrations up to 0011 only: a database as it was before the enums.
    const before = await migrationsFolderOf({ upTo: '0011_sandbox_request_log' });
    try {
      await migrate(drizzle(sql), { migrationsFolder: before.folder });

      const [lab] = await sql`insert into laboratories (display_name, legal_name, operating_name) values ('Lab', 'Lab', 'Lab') returning id`;
      const [client] = await sql`insert into api_clients (laboratory_id, name) values (${lab.id}, 'client') returning id`;
      const [subscription] = await sql`
        insert into webhook_subscriptions (laboratory_id, client_id, environment, url, event_types, secret_protected)
        values (${lab.id}, ${client.id}, 'sandbox', 'https://example.com/hook', '{order.created}', 'x') returning id`;
      // Each state with an outcome its last attempt may have (a cancelled delivery's attempt asked for a retry).
      const outcomeOf: Record<string, string> = { pending: 'sending', delivered: 'delivered', dead_lettered: 'dead_lettered', cancelled: 'retry', failed: 'failed' };
      for (const state of Object.keys(outcomeOf)) {
        const [delivery] = await sql`
          insert into webhook_deliveries (subscription_id, kind, state, completed_at)
          values (${subscription.id}, 'test', ${state}, ${state === 'pending' ? null : new Date().toISOString()}::timestamptz) returning id`;
        await sql`insert into webhook_delivery_attempts (delivery_id, attempt_number, started_at, outcome) values (${delivery.id}, 1, now(), ${outcomeOf[state]})`;
      }
      await sql`insert into webhook_deliveries (subscription_id, kind) values (${subscription.id}, 'test')`;

      await runMigrations(url);
      expect(await schemaVerdict(sql)).toEqual({ servable: true, pending: [] });
      const columns = await sql<{ column_name: string; udt_name: string; column_default: string | null }[]>`
        select column_name, udt_name, column_default from information_schema.columns
        where (table_name, column_name) in (('webhook_deliveries', 'state'), ('webhook_delivery_attempts', 'outcome')) order by column_name`;
      expect(columns).toEqual([
        { column_name: 'outcome', udt_name: 'webhook_attempt_outcome', column_default: null },
        { column_name: 'state', udt_name: 'webhook_delivery_state', column_default: "'pending'::webhook_delivery_state" },
      ]);
      const rows = await sql<{ state: string; n: number }[]>`select state::text, count(*)::int as n from webhook_deliveries group by state order by state::text`;
      expect(rows).toEqual([
        { state: 'cancelled', n: 1 },
        { state: 'dead_lettered', n: 1 },
        { state: 'delivered', n: 1 },
        { state: 'failed', n: 1 },
        { state: 'pending', n: 2 },
      ]);
      const outcomes = await sql<{ outcome: string }[]>`select outcome::text from webhook_delivery_attempts order by outcome::text`;
      expect(outcomes.map((row) => row.outcome)).toEqual(['dead_lettered', 'delivered', 'failed', 'retry', 'sending']);
      await expect(sql`insert into webhook_deliveries (subscription_id, kind, state) values (${subscription.id}, 'test', 'lost')`).rejects.toThrow(/webhook_delivery_state/);

      // The partial indexes are there, with their predicates, and the planner can use them.
      const indexes = await sql<{ indexname: string; indexdef: string }[]>`
        select indexname, indexdef from pg_indexes where indexname in ('webhook_deliveries_dead_idx', 'webhook_deliveries_completed_idx') order by indexname`;
      expect(indexes.map((index) => index.indexname)).toEqual(['webhook_deliveries_completed_idx', 'webhook_deliveries_dead_idx']);
      expect(indexes[0].indexdef).toMatch(/WHERE \(state <> 'pending'::webhook_delivery_state\)/);
      expect(indexes[1].indexdef).toMatch(/WHERE \(state = 'dead_lettered'::webhook_delivery_state\)/);
      await sql.begin(async (tx) => {
        await tx`set local enable_seqscan = off`;
        // Since 0022 the table is partitioned: these rows sit in its legacy partition, whose copies of
        // the indexes carry the legacy_ prefix; the other partitions' copies are named by PostgreSQL.
        const plan = await tx.unsafe(`explain select id from webhook_deliveries where state = 'dead_lettered' order by created_at`);
        expect(plan.map((row) => row['QUERY PLAN']).join('\n')).toMatch(/webhook_deliveries_legacy_dead_idx/);
        const completed = await tx.unsafe(`explain select id from webhook_deliveries where completed_at < now() and state <> 'pending'`);
        expect(completed.map((row) => row['QUERY PLAN']).join('\n')).toMatch(/webhook_deliveries_legacy_completed_idx/);
      });
    } finally {
      await sql.end();
      await before.remove();
    }
  });

  it('withDatabase swaps only the database name of a URL', () => {
    expect(withDatabase('postgres://u:p@127.0.0.1:5432/one?sslmode=disable', 'two')).toBe('postgres://u:p@127.0.0.1:5432/two?sslmode=disable');
  });
});
