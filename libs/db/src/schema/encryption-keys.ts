import { bigint, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { createdAt } from './common';

/**
 * The keyring of data keys that encrypt personal data at rest (libs/domain/src/security/key-rotation.ts).
 * Each row is one key version, its key wrapped (AES-256-GCM) by a subkey of the master key;
 * version 1 has none: it is the key derived from the master key, which every release before key
 * rotation used. New writes use the newest version. Retiring a version deletes its row; the
 * foreign keys from the protected tables make that fail while any row still names it.
 * The re-encryption job's progress towards a version is kept on that version's row.
 */
export const encryptionKeys = pgTable('encryption_keys', {
  version: integer('version').primaryKey(),
  wrappedKey: text('wrapped_key'),
  createdAt: createdAt(),
  reencryptedRows: bigint('reencrypted_rows', { mode: 'number' }).notNull().default(0),
  reencryptLastBatchAt: timestamp('reencrypt_last_batch_at', { withTimezone: true }),
  reencryptDoneAt: timestamp('reencrypt_done_at', { withTimezone: true }),
});
