import { sql } from 'drizzle-orm';
import { index, pgEnum, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, environmentEnum, id } from './common';
import { laboratories } from './laboratories';

export const clientStatusEnum = pgEnum('api_client_status', ['active', 'disabled']);

/** A partner integration (one digital-health company's system) registered with a laboratory. */
export const apiClients = pgTable(
  'api_clients',
  {
    id: id(),
    laboratoryId: uuid('laboratory_id')
      .notNull()
      .references(() => laboratories.id),
    name: text('name').notNull(),
    status: clientStatusEnum('status').notNull().default('active'),
    createdAt: createdAt(),
  },
  (t) => [index('api_clients_laboratory_idx').on(t.laboratoryId)],
);

/**
 * API keys are stored only as a SHA-256 hash of the full key text; `display_prefix`
 * lets an administrator recognise a key without it being recoverable.
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: id(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => apiClients.id),
    laboratoryId: uuid('laboratory_id')
      .notNull()
      .references(() => laboratories.id),
    environment: environmentEnum('environment').notNull(),
    keyHash: text('key_hash').notNull(),
    displayPrefix: text('display_prefix').notNull(),
    scopes: text('scopes').array().notNull(),
    /**
     * Set only on keys the service manages itself (`demo_banner`: the sandbox key `npm start`
     * prints), so rotating one never touches a key an administrator created (those have none).
     */
    purpose: text('purpose'),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('api_keys_key_hash_idx').on(t.keyHash),
    index('api_keys_client_idx').on(t.clientId),
    index('api_keys_active_idx').on(t.clientId, t.environment).where(sql`revoked_at is null`),
    // At most one active key per purpose and client: two starts racing cannot leave two banner keys.
    uniqueIndex('api_keys_purpose_active_idx').on(t.clientId, t.purpose).where(sql`purpose is not null and revoked_at is null`),
  ],
);
