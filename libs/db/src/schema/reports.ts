import { index, pgTable, timestamp, uuid } from 'drizzle-orm/pg-core';
import { apiClients, apiKeys } from './clients';
import { environmentEnum, id } from './common';
import { laboratories } from './laboratories';
import { orders, resultVersions } from './orders';
import { programs } from './programs';

/**
 * A short-lived permission to fetch one released version's report document, issued by
 * GET …/report to one API key. The retrieval path names this row and nothing else: the row is
 * not a credential (every use still needs the same key), and its expiry lives here, on the
 * server, never in a signature or token a path could carry. Expired rows are pruned on issue.
 */
export const reportRetrievals = pgTable(
  'report_retrievals',
  {
    id: id(),
    keyId: uuid('key_id')
      .notNull()
      .references(() => apiKeys.id),
    clientId: uuid('client_id')
      .notNull()
      .references(() => apiClients.id),
    laboratoryId: uuid('laboratory_id')
      .notNull()
      .references(() => laboratories.id),
    environment: environmentEnum('environment').notNull(),
    programId: uuid('program_id')
      .notNull()
      .references(() => programs.id),
    orderId: uuid('order_id')
      .notNull()
      .references(() => orders.id),
    resultId: uuid('result_id')
      .notNull()
      .references(() => resultVersions.id),
    /** The version that superseded this one when the record was issued (null if it was current): a later supersession voids the record. */
    supersededByResultId: uuid('superseded_by_result_id'),
    issuedAt: timestamp('issued_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('report_retrievals_expires_idx').on(t.expiresAt)],
);
