import { sql } from 'drizzle-orm';
import { bigint, bigserial, customType, date, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { environmentEnum } from './common';

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

/**
 * The access audit trail (docs/audit.md): one row per answered partner read (`kind` read) and per
 * control-plane action (`kind` control). Append-only: the service inserts rows and the sealing pass
 * (libs/domain/src/audit/seal.ts) fills `seal_seq` and `chain_hash` once, nothing else updates or
 * deletes a row except retention, which drops whole months. Range-partitioned by recorded_at,
 * monthly (libs/domain/src/audit/partitions.ts makes them ahead).
 * Resource ids are text, not uuid: a refused read's path parameter may be anything the caller sent,
 * and one malformed id must never fail the batch it is written in.
 */
export const auditRecords = pgTable(
  'audit_records',
  {
    // Drawn from one sequence for every partition.
    id: bigserial('id', { mode: 'number' }).notNull(),
    recordedAt: timestamp('recorded_at', { withTimezone: true, precision: 3 }).notNull(),
    /** `read` (a partner read) or `control` (a control-plane action). */
    kind: text('kind').notNull(),
    laboratoryId: uuid('laboratory_id'),
    clientId: uuid('client_id'),
    environment: environmentEnum('environment'),
    /** The API key that made the read or the console action. */
    keyId: uuid('key_id'),
    /** Who acted: `key:<display prefix>` for a partner, `operator:<name>` for an administrator. */
    actor: text('actor').notNull(),
    /** The procedure or command, e.g. `orders.get`, `keys.create`, `lab.releaseResult`. */
    action: text('action').notNull(),
    /** `rest`, `console` (partner doors), `admin` (the admin CLI) or `system`. */
    door: text('door').notNull(),
    /** The partner route (`GET /v1/orders/{orderId}`), when there is one. */
    route: text('route'),
    /** The HTTP status a read was answered with; null for control actions (recorded only when they commit). */
    status: integer('status'),
    requestId: text('request_id'),
    orderId: text('order_id'),
    /** The most specific other resource: a result version, retrieval, key, program or subscription id. */
    resourceId: text('resource_id'),
    details: jsonb('details'),
    contentHash: bytea('content_hash').notNull(),
    /** Position in its month's hash chain, set by the sealing pass. */
    sealSeq: bigint('seal_seq', { mode: 'number' }),
    chainHash: bytea('chain_hash'),
  },
  (t) => [
    // Time first: the key is also the newest-first order `admin audit list` pages by, so no
    // separate time index is kept up by every read's record.
    primaryKey({ name: 'audit_records_pkey', columns: [t.recordedAt, t.id] }),
    index('audit_records_by_order').on(t.orderId, t.recordedAt),
    index('audit_records_by_resource').on(t.resourceId, t.recordedAt),
    index('audit_records_by_client').on(t.clientId, t.recordedAt),
    index('audit_records_by_key').on(t.keyId, t.recordedAt),
    // The sealing pass's work list: small, as rows leave it once sealed.
    index('audit_records_unsealed').on(t.recordedAt).where(sql`${t.sealSeq} is null`),
    // Verify and export walk each month's chain in order. Partial: a read's record enters it when
    // sealed, not when inserted, so the read waits on one index fewer.
    index('audit_records_by_seal').on(t.sealSeq).where(sql`${t.sealSeq} is not null`),
  ],
);

/** The head of each month's chain: what `admin audit verify` recomputes, and what export hands out to keep elsewhere. */
export const auditChainHeads = pgTable('audit_chain_heads', {
  /** The month, its first day (UTC). */
  period: date('period', { mode: 'string' }).primaryKey(),
  sealedCount: bigint('sealed_count', { mode: 'number' }).notNull(),
  headHash: bytea('head_hash').notNull(),
  sealedAt: timestamp('sealed_at', { withTimezone: true }).notNull(),
});
