import type postgres from 'postgres';
import type { Migration } from './read';

/**
 * Which migrations a database has: drizzle's own table (`drizzle.__drizzle_migrations`, a row of
 * hash and journal `when` per migration), kept as drizzle writes it so releases that still apply
 * migrations with drizzle's migrator see the same record; and, beside it, the contract steps
 * (`requires-code-from`) that shut older releases out.
 */
export async function ensureBookkeeping(sql: postgres.Sql): Promise<void> {
  await sql`create schema if not exists drizzle`;
  await sql`create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`;
  await sql`
    create table if not exists drizzle.lop_schema_contracts (
      created_at bigint primary key,
      tag text not null,
      requires_code_from text not null)`;
}

/** The journal `when` of every applied migration (drizzle's `created_at`); empty on a new database. */
export async function appliedMigrations(sql: postgres.Sql): Promise<Set<number>> {
  const rows = await sql<{ created_at: string }[]>`select created_at from drizzle.__drizzle_migrations`.catch(noTableYet);
  return new Set(rows.map((row) => Number(row.created_at)));
}

/** Contract steps applied by any release: each names the migration a serving release must know. */
export async function appliedContracts(sql: postgres.Sql): Promise<{ tag: string; requiresCodeFrom: string }[]> {
  const rows = await sql<{ tag: string; requires_code_from: string }[]>`
    select tag, requires_code_from from drizzle.lop_schema_contracts order by created_at`.catch(noTableYet);
  return rows.map((row) => ({ tag: row.tag, requiresCodeFrom: row.requires_code_from }));
}

export async function recordApplied(sql: postgres.TransactionSql, migration: Migration): Promise<void> {
  await sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`;
  if (migration.requiresCodeFrom) {
    await sql`insert into drizzle.lop_schema_contracts (created_at, tag, requires_code_from) values (${migration.folderMillis}, ${migration.tag}, ${migration.requiresCodeFrom})`;
  }
}

/** A database no migration run has reached has neither table (nor the schema): nothing applied. */
function noTableYet(error: { code?: string }): never[] {
  if (error.code === '42P01' || error.code === '3F000') return [];
  throw error;
}
