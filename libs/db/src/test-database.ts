import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { migrationsFolder, runMigrations } from './migrate';

/** Replaces the database name of a PostgreSQL URL. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh database on the given server, so concurrent test runs never see each other's rows:
 * migrated, unless a migration test wants it empty (`migrated: false`).
 */
export async function createTestDatabase(serverUrl: string, label = 'test', options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const name = `lop_${label}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`create database "${name}"`);
  await admin.end({ timeout: 5 });
  const url = withDatabase(serverUrl, name);
  if (options.migrated !== false) await runMigrations(url);
  return {
    url,
    drop: async () => {
      const dropper = postgres(serverUrl, { max: 1, onnotice: () => undefined });
      await dropper.unsafe(`drop database if exists "${name}" with (force)`);
      await dropper.end({ timeout: 5 });
    },
  };
}

/**
 * A migrations folder for a release that does not exist: the committed migrations cut after
 * `upTo` (a tag) when given — the previous release's — plus `extra` ones, each a journal entry
 * after the last. For tests of the runner and of what a release serves.
 */
export async function migrationsFolderOf(options: { upTo?: string; extra?: { tag: string; sql: string }[] }): Promise<{ folder: string; remove(): Promise<void> }> {
  const folder = await mkdtemp(join(tmpdir(), 'lop-migrations-'));
  await cp(migrationsFolder, folder, { recursive: true });
  const journalPath = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(await readFile(journalPath, 'utf8')) as { entries: { idx: number; version: string; when: number; tag: string; breakpoints: boolean }[] };
  if (options.upTo) journal.entries = journal.entries.slice(0, journal.entries.findIndex((entry) => entry.tag === options.upTo) + 1);
  let when = Math.max(...journal.entries.map((entry) => entry.when));
  for (const migration of options.extra ?? []) {
    await writeFile(join(folder, `${migration.tag}.sql`), migration.sql);
    journal.entries.push({ idx: journal.entries.length, version: '7', when: (when += 1000), tag: migration.tag, breakpoints: true });
  }
  await writeFile(journalPath, JSON.stringify(journal));
  return { folder, remove: () => rm(folder, { recursive: true, force: true }) };
}
