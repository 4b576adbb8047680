import { pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, environmentEnum } from './common';
import { apiClients } from './clients';

/** A partner's opaque subject reference. No personal data is ever stored here (spec rule 3). */
export const subjects = pgTable(
  'subjects',
  {
    clientId: uuid('client_id')
      .notNull()
      .references(() => apiClients.id),
    environment: environmentEnum('environment').notNull(),
    externalSubjectId: text('external_subject_id').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.environment, t.externalSubjectId] })],
);
