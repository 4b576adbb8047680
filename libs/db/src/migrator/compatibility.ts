import postgres from 'postgres';
import { appliedContracts, appliedMigrations } from './bookkeeping';
import { runMigrations } from './run';
import { migrationsFolder, readMigrations, type Migration } from './read';

/**
 * The newest migration this release's code reads or writes. A release must serve the schema of
 * the release before it (a rollout starts new replicas before or while it migrates), so this
 * never names a migration the previous release did not have; the rolling-upgrade test
 * (tools/upgrade) checks that against the previous release's journal.
 */
export const CODE_NEEDS_MIGRATION = '0012_webhook_delivery_state_enum';

export type SchemaVerdict =
  /** `pending`: this release's migrations not applied yet, none of which its code needs. */
  | { servable: true; pending: string[] }
  /** `behind`: a migration the code needs is missing; `ahead`: a newer release's contract step shut this one out. */
  | { servable: false; reason: 'behind' | 'ahead'; sentence: string; missing: string[] };

const known = new Map<string, Migration[]>();
const migrationsIn = (folder: string) => known.get(folder) ?? known.set(folder, readMigrations(folder)).get(folder)!;

/** Whether this release can serve the database's schema, and if not, one sentence saying why and what to do. */
export async function schemaVerdict(sql: postgres.Sql, options: { folder?: string; needs?: string } = {}): Promise<SchemaVerdict> {
  const migrations = migrationsIn(options.folder ?? migrationsFolder);
  const needs = options.needs ?? CODE_NEEDS_MIGRATION;
  const needed = migrations.slice(0, migrations.findIndex((migration) => migration.tag === needs) + 1);
  // One after the other, like the single query /readyz made before: two at once on a database
  // that had stopped answering kept the pool from serving for a moment after it came back
  // (apps/partner-api/src/database-failures.test.ts failed 1 run in 3).
  const applied = await appliedMigrations(sql);
  const contracts = await appliedContracts(sql);
  const missing = needed.filter((migration) => !applied.has(migration.folderMillis)).map((migration) => migration.tag);
  if (missing.length > 0) {
    const sentence =
      applied.size === 0
        ? 'The database has no schema yet: run `npm run migrate` (or `npm run admin -- migrate`) with this release before starting it.'
        : `The database schema is older than this release serves (${missing.length} migration(s) missing, the first ${missing[0]}): run \`npm run migrate\` with this release before starting it.`;
    return { servable: false, reason: 'behind', sentence, missing };
  }
  const tags = new Set(migrations.map((migration) => migration.tag));
  const shutOut = contracts.find((contract) => !tags.has(contract.requiresCodeFrom));
  if (shutOut) {
    return {
      servable: false,
      reason: 'ahead',
      sentence: `The database was migrated past what this release serves: its migration ${shutOut.tag} needs a release that has ${shutOut.requiresCodeFrom}; deploy that release or a newer one.`,
      missing: [],
    };
  }
  return { servable: true, pending: migrations.filter((migration) => !applied.has(migration.folderMillis)).map((migration) => migration.tag) };
}

/** Refused to start: the schema is one this release cannot serve (the message is the sentence to print). */
export class SchemaNotServedError extends Error {
  constructor(readonly verdict: Extract<SchemaVerdict, { servable: false }>) {
    super(verdict.sentence);
    this.name = 'SchemaNotServedError';
  }
}

/** schemaVerdict over a connection of its own, for a process that has no pool yet. */
export async function readSchemaVerdict(url: string, options: { folder?: string; needs?: string } = {}): Promise<SchemaVerdict> {
  const sql = postgres(url, { max: 1, onnotice: () => undefined, connection: { application_name: 'lop-schema-check' } });
  try {
    return await schemaVerdict(sql, options);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** For a process about to serve: throws SchemaNotServedError unless the database's schema is one this release serves. */
export async function assertSchemaServed(url: string, options: { folder?: string; needs?: string } = {}): Promise<Extract<SchemaVerdict, { servable: true }>> {
  const verdict = await readSchemaVerdict(url, options);
  if (!verdict.servable) throw new SchemaNotServedError(verdict);
  return verdict;
}

/**
 * What a serving process does with the schema before it serves: applies pending migrations when
 * told to (`npm start`, PARTNER_MIGRATE_ON_START), then refuses a schema this release cannot serve.
 */
export async function prepareSchema(url: string, options: { migrate: boolean; onProgress?: (line: string) => void }): Promise<void> {
  if (options.migrate) await runMigrations(url, { onProgress: options.onProgress });
  await assertSchemaServed(url);
}
