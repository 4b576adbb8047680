import { boolean, index, pgEnum, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, environmentEnum, id } from './common';
import { laboratories } from './laboratories';

export const serviceStatusEnum = pgEnum('location_service_status', ['active', 'inactive']);

/** A collection site. Street address, telephone and operational notes are kept but never returned (spec rule 4). */
export const locations = pgTable(
  'locations',
  {
    id: id(),
    laboratoryId: uuid('laboratory_id')
      .notNull()
      .references(() => laboratories.id),
    environment: environmentEnum('environment').notNull(),
    locationCode: text('location_code').notNull(),
    name: text('name').notNull(),
    region: text('region').notNull(),
    city: text('city').notNull(),
    country: text('country').notNull(),
    timezone: text('timezone').notNull(),
    collectionMethods: text('collection_methods').array().notNull().default([]),
    appointmentRequired: boolean('appointment_required').notNull().default(false),
    walkInAllowed: boolean('walk_in_allowed').notNull().default(true),
    serviceStatus: serviceStatusEnum('service_status').notNull().default('active'),
    streetAddress: text('street_address'),
    telephone: text('telephone'),
    operationalNotes: text('operational_notes'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('locations_code_idx').on(t.laboratoryId, t.environment, t.locationCode),
    index('locations_region_idx').on(t.laboratoryId, t.environment, t.region),
  ],
);
