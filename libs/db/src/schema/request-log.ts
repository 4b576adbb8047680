import { bigserial, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { environmentEnum } from './common';

/**
 * The sandbox request log (docs/request-log.md): one row per partner request made with a sandbox
 * key, written in batches after the response (libs/domain/src/request-log/). Bodies are stored only
 * after redaction and truncation; no header, key or path parameter is stored, only the key's
 * display prefix. Pruned after 7 days by the retention job. `id` is the tail cursor.
 * Range-partitioned by occurred_at, daily (migrations 0021, 0024): retention drops whole days.
 */
export const sandboxRequestLog = pgTable(
  'sandbox_request_log',
  {
    // Drawn from one sequence for every partition: unique, and in insertion order, across days.
    id: bigserial('id', { mode: 'number' }).notNull(),
    laboratoryId: uuid('laboratory_id').notNull(),
    clientId: uuid('client_id').notNull(),
    environment: environmentEnum('environment').notNull(),
    requestId: text('request_id').notNull(),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    method: text('method').notNull(),
    route: text('route').notNull(),
    status: integer('status').notNull(),
    errorCode: text('error_code'),
    durationMs: integer('duration_ms').notNull(),
    keyPrefix: text('key_prefix').notNull(),
    /**
     * The request's source (docs/request-log.md): `rest` (curl, the integration), `lop` (a REST
     * request with lop's User-Agent, since issue 35) or `console` (the console's action standing for
     * the REST request). Named for the two doors it held first; free text, so a release that knows
     * only `rest` and `console` reads `lop` as `rest`.
     */
    door: text('door').notNull(),
    /** The scope the route needs: the bodies are shown only to a key that carries it. Null for routes that need none. */
    scope: text('scope'),
    requestBody: jsonb('request_body'),
    responseBody: jsonb('response_body'),
  },
  (t) => [
    primaryKey({ name: 'sandbox_request_log_pkey', columns: [t.id, t.occurredAt] }),
    index('sandbox_request_log_by_client').on(t.clientId, t.environment, t.laboratoryId, t.id),
    index('sandbox_request_log_by_request_id').on(t.clientId, t.requestId),
    index('sandbox_request_log_by_time').on(t.occurredAt),
  ],
);
