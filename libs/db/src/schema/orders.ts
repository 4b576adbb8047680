import { sql } from 'drizzle-orm';
import { boolean, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid, jsonb, bigint } from 'drizzle-orm/pg-core';
import { createdAt, environmentEnum, id } from './common';
import { apiClients } from './clients';
import { laboratories } from './laboratories';
import { catalogItems, programs } from './programs';

/**
 * A test order. `lifecycle_detail` is the state; lifecycle and next_action are derived from it
 * by the one transition table in the domain. Personal data lives only in `protected_data`,
 * encrypted (AES-256-GCM) by the domain before it reaches this table.
 */
export const orders = pgTable(
  'orders',
  {
    id: id(),
    laboratoryId: uuid('laboratory_id')
      .notNull()
      .references(() => laboratories.id),
    clientId: uuid('client_id')
      .notNull()
      .references(() => apiClients.id),
    environment: environmentEnum('environment').notNull(),
    externalOrderId: text('external_order_id').notNull(),
    programId: uuid('program_id')
      .notNull()
      .references(() => programs.id),
    itemId: uuid('item_id')
      .notNull()
      .references(() => catalogItems.id),
    externalSubjectId: text('external_subject_id').notNull(),
    collection: text('collection').notNull(),
    region: text('region'),
    billingMode: text('billing_mode'),
    requestedCollectionAt: timestamp('requested_collection_at', { withTimezone: true }),
    collectionLocation: text('collection_location'),
    protectedData: text('protected_data'),
    synthetic: boolean('synthetic').notNull(),
    lifecycleDetail: text('lifecycle_detail').notNull(),

    requisitionState: text('requisition_state').notNull().default('not_issued'),
    requisitionId: text('requisition_id'),
    laboratoryReference: text('laboratory_reference'),
    requisitionCreatedAt: timestamp('requisition_created_at', { withTimezone: true }),

    accessionId: uuid('accession_id'),
    accessionNumber: text('accession_number'),
    accessionSourceSystem: text('accession_source_system'),
    accessionedAt: timestamp('accessioned_at', { withTimezone: true }),
    receivedAt: timestamp('received_at', { withTimezone: true }),

    transmissionStatus: text('transmission_status').notNull().default('not_sent'),
    ackStatus: text('ack_status').notNull().default('not_requested'),
    externalOrderRef: text('external_order_ref'),
    transmissionAttemptNo: integer('transmission_attempt_no').notNull().default(0),
    sentAt: timestamp('sent_at', { withTimezone: true }),
    acknowledgedAt: timestamp('acknowledged_at', { withTimezone: true }),

    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('orders_external_order_id_idx').on(t.clientId, t.environment, t.externalOrderId),
    index('orders_client_env_created_idx').on(t.clientId, t.environment, t.createdAt),
  ],
);

export const specimens = pgTable(
  'specimens',
  {
    id: id(),
    orderId: uuid('order_id')
      .notNull()
      .references(() => orders.id),
    specimenCode: text('specimen_code').notNull(),
    specimenType: text('specimen_type').notNull(),
    status: text('status').notNull(),
    accessionNumber: text('accession_number'),
    rejectionReason: text('rejection_reason'),
    collectedAt: timestamp('collected_at', { withTimezone: true }),
    receivedAt: timestamp('received_at', { withTimezone: true }),
    recollectionOf: uuid('recollection_of'),
    createdAt: createdAt(),
  },
  (t) => [index('specimens_order_idx').on(t.orderId)],
);

/** The canonical exception model, shared by the partner API and laboratory operations. */
export const orderExceptions = pgTable(
  'order_exceptions',
  {
    id: id(),
    orderId: uuid('order_id')
      .notNull()
      .references(() => orders.id),
    category: text('category').notNull(),
    severity: text('severity').notNull(),
    status: text('status').notNull(),
    ownerRole: text('owner_role').notNull(),
    entityType: text('entity_type').notNull(),
    entityId: uuid('entity_id'),
    retryable: boolean('retryable').notNull().default(false),
    openedAt: timestamp('opened_at', { withTimezone: true }).notNull().defaultNow(),
    resolvedAt: timestamp('resolved_at', { withTimezone: true }),
    sourceExceptionType: text('source_exception_type'),
    sourceDomain: text('source_domain'),
    sourceAdapterKey: text('source_adapter_key'),
    // Operator-only: never returned to partners.
    operatorNotes: text('operator_notes'),
    resolutionText: text('resolution_text'),
  },
  (t) => [index('order_exceptions_order_idx').on(t.orderId, t.openedAt)],
);

/**
 * Append-only result versions. Only rows with status `released` are ever visible to partners;
 * observations are stored exactly as the laboratory supplied them.
 */
export const resultVersions = pgTable(
  'result_versions',
  {
    id: id(),
    orderId: uuid('order_id')
      .notNull()
      .references(() => orders.id),
    version: integer('version'),
    versionType: text('version_type').notNull(),
    state: text('state').notNull(),
    status: text('status').notNull(),
    performingLaboratory: text('performing_laboratory').notNull(),
    performingLaboratorySystem: text('performing_laboratory_system').notNull(),
    sourceResultId: text('source_result_id').notNull(),
    observations: jsonb('observations').notNull(),
    isCritical: boolean('is_critical').notNull().default(false),
    reportDocument: text('report_document'),
    reportContentType: text('report_content_type'),
    supersedesResultId: uuid('supersedes_result_id'),
    releasedAt: timestamp('released_at', { withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [
    index('result_versions_order_idx').on(t.orderId),
    uniqueIndex('result_versions_order_version_idx').on(t.orderId, t.version).where(sql`version is not null`),
  ],
);

/** Per-stream counter: taking its row lock orders event sequences by commit (no gaps, no overtaking). */
export const eventStreams = pgTable(
  'event_streams',
  {
    clientId: uuid('client_id')
      .notNull()
      .references(() => apiClients.id),
    environment: environmentEnum('environment').notNull(),
    lastSequence: bigint('last_sequence', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.environment] })],
);

/**
 * The event stream and transactional outbox: written in the same transaction as the change.
 *
 * Partitioned by RANGE (created_at), one partition a month, by migrations 0017-0019, which
 * drizzle's schema cannot express: these are its columns (in the order `select *` returns them;
 * never reorder), not its keys. The primary key on id and the unique stream index below exist on
 * each partition, not on the table (a partitioned table's unique keys must include created_at):
 * uniqueness is per partition, which is all the random ids and the stream's counter
 * (event_streams) need. The client foreign key is each partition's own too. Partitions are made ahead by
 * libs/domain/src/events/partitions.ts (ensurePartitions, libs/db/src/partitions.ts); the first one
 * may be `events_legacy`, the single table of earlier releases, attached as the range it held.
 * drizzle-kit generate would not know any of this: a migration touching events is written by hand.
 */
export const events = pgTable(
  'events',
  {
    id: uuid('id').primaryKey(),
    clientId: uuid('client_id')
      .notNull()
      .references(() => apiClients.id),
    environment: environmentEnum('environment').notNull(),
    sequence: bigint('sequence', { mode: 'number' }).notNull(),
    type: text('type').notNull(),
    version: integer('version').notNull().default(1),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    programId: uuid('program_id'),
    orderId: uuid('order_id'),
    data: jsonb('data').notNull(),
    /**
     * The event as partners receive it, the bytes of GET /v1/events and of a webhook body, written
     * once at append (0014). Null on events an earlier release wrote: they are rendered from the columns.
     */
    body: text('body'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('events_stream_sequence_idx').on(t.clientId, t.environment, t.sequence)],
);

/** Idempotency keys of order creation, per (client, environment); kept at least 24 hours. */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    clientId: uuid('client_id')
      .notNull()
      .references(() => apiClients.id),
    environment: environmentEnum('environment').notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    // state and locked_until are the lease of releases before the advisory lock (idempotency.ts):
    // every release since writes 'completed' and now(). They go over three releases (docs/migrations.md,
    // "Contracts in progress"): defaults here (0030), the next release stops naming them, the one after drops them.
    state: text('state').notNull().default('completed'),
    lockedUntil: timestamp('locked_until', { withTimezone: true }).notNull().defaultNow(),
    responseStatus: integer('response_status'),
    responseData: jsonb('response_data'),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.environment, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
);

/** Fixed-window request counters, shared by every replica; `subject` is `<policy>:<client id>:<environment>`. */
export const rateLimitCounters = pgTable(
  'rate_limit_counters',
  {
    subject: text('subject').notNull(),
    windowStart: timestamp('window_start', { withTimezone: true }).notNull(),
    count: integer('count').notNull(),
  },
  // Retention prunes by window age alone, which the primary key (subject first) cannot serve.
  (t) => [primaryKey({ columns: [t.subject, t.windowStart] }), index('rate_limit_counters_window_idx').on(t.windowStart)],
);
