import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { runMigrations } from './migrate';

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
