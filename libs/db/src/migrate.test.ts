import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { pendingMigrationCount, runMigrations } from './migrate';
import { createTestDatabase, withDatabase } from './test-database';

const runDatabaseUrl = inject('databaseUrl');
const serverUrl = withDatabase(runDatabaseUrl, 'postgres');
const made: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  for (const database of made) await database.drop();
});

describe('migrations', () => {
  it('the run database is fully migrated: no committed migration is pending', async () => {
    const sql = postgres(runDatabaseUrl, { max: 1, onnotice: () => undefined });
    try {
      expect(await pendingMigrationCount(sql)).toBe(0);
    } finally {
      await sql.end();
    }
  });

  it('an empty database reports every migration pending, and none after migrating', async () => {
    const admin = postgres(serverUrl, { max: 1, onnotice: () => undefined });
    const name = `lop_empty_${Date.now().toString(36)}`;
    await admin.unsafe(`create database "${name}"`);
    made.push({
      drop: async () => {
        await admin.unsafe(`drop database if exists "${name}" with (force)`);
        await admin.end();
      },
    });
    const url = withDatabase(serverUrl, name);
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      expect(await pendingMigrationCount(sql)).toBeGreaterThan(0);
      await runMigrations(url);
      expect(await pendingMigrationCount(sql)).toBe(0);
    } finally {
      await sql.end();
    }
  });

  it('replicas starting at once migrate safely: concurrent runs serialise on an advisory lock', async () => {
    const database = await createTestDatabase(serverUrl, 'concurrent');
    made.push(database);
    await expect(Promise.all([runMigrations(database.url), runMigrations(database.url), runMigrations(database.url)])).resolves.toBeDefined();
    const sql = postgres(database.url, { max: 1, onnotice: () => undefined });
    try {
      const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
      expect(n).toBeGreaterThan(0);
      expect(await pendingMigrationCount(sql)).toBe(0);
    } finally {
      await sql.end();
    }
  });

  it('withDatabase swaps only the database name of a URL', () => {
    expect(withDatabase('postgres://u:p@127.0.0.1:5432/one?sslmode=disable', 'two')).toBe('postgres://u:p@127.0.0.1:5432/two?sslmode=disable');
  });
});
