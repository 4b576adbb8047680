import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Beside the file in a bundled build (tools/build/bundle.mjs); beside the sources in the repository.
export const migrationsFolder = [new URL('./migrations', import.meta.url), new URL('../../migrations', import.meta.url)]
  .map((url) => fileURLToPath(url))
  .find((dir) => existsSync(dir))!;

/**
 * What a migration file may say about how it runs, in comment lines `-- lop-migrate: <directive>`
 * (docs/migrations.md):
 * - `no-transaction` (anywhere in the file): each statement runs on its own, outside a
 *   transaction — required for `CREATE INDEX CONCURRENTLY` and for batched backfills.
 * - `requires-code-from <tag>` (anywhere in the file): a contract step; once it is applied, only
 *   releases whose migrations include <tag> can serve the database.
 * - `backfill` (inside one statement): the statement changes at most one batch of rows and is run
 *   again until it changes none; only in a `no-transaction` migration.
 * - `attempts <n>` (anywhere in the file): tries per statement (or per transaction) on lock timeout
 *   or deadlock, when more than the runner's: a step that needs an exclusive lock on a table that
 *   every partner transaction touches (0019's swap) may have to wait for a quiet moment many times.
 */
const DIRECTIVE = /^\s*--\s*lop-migrate:\s*(.*?)\s*$/gm;

export interface MigrationStatement {
  /** 1-based, as an operator counts the file's statements. */
  ordinal: number;
  text: string;
  backfill: boolean;
}

export interface Migration {
  tag: string;
  /** The journal's `when`: drizzle's identity of a migration (its `created_at` row). */
  folderMillis: number;
  /** sha256 of the file, as drizzle computes it. */
  hash: string;
  transactional: boolean;
  requiresCodeFrom?: string;
  /** `-- lop-migrate: attempts <n>`: this migration's own tries on lock timeout or deadlock. */
  attempts?: number;
  statements: MigrationStatement[];
}

/** A committed migration that cannot run as written: a fault in the file, found before anything runs. */
export class MigrationFileError extends Error {}

/** A statement chunk with nothing but comments and blank lines in it. */
const isEmpty = (chunk: string) => chunk.replace(/--.*$/gm, '').trim() === '';

export function readMigrations(folder: string = migrationsFolder): Migration[] {
  const journal = JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string; when: number }[] };
  const tags = new Set(journal.entries.map((entry) => entry.tag));
  return journal.entries.map(({ tag, when }) => {
    const file = readFileSync(join(folder, `${tag}.sql`), 'utf8');
    const chunks = file.split('--> statement-breakpoint');
    let transactional = true;
    let requiresCodeFrom: string | undefined;
    let attempts: number | undefined;
    const statements: MigrationStatement[] = [];
    chunks.forEach((chunk, index) => {
      let backfill = false;
      for (const [, directive] of chunk.matchAll(DIRECTIVE)) {
        const [word, argument] = directive.split(/\s+/, 2);
        if (word === 'no-transaction') transactional = false;
        else if (word === 'backfill') backfill = true;
        else if (word === 'requires-code-from' && argument && tags.has(argument)) requiresCodeFrom = argument;
        else if (word === 'attempts' && argument && /^[1-9][0-9]{0,3}$/.test(argument)) attempts = Number(argument);
        else throw new MigrationFileError(`${tag}.sql: unknown or incomplete directive "-- lop-migrate: ${directive}"`);
      }
      if (isEmpty(chunk)) return;
      statements.push({ ordinal: index + 1, text: chunk, backfill });
    });
    if (transactional && statements.some((statement) => statement.backfill)) {
      throw new MigrationFileError(`${tag}.sql: a backfill runs in batches, each committed: the migration must say "-- lop-migrate: no-transaction"`);
    }
    return { tag, folderMillis: when, hash: createHash('sha256').update(file).digest('hex'), transactional, requiresCodeFrom, ...(attempts ? { attempts } : {}), statements };
  });
}
