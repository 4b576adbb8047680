import { pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, id } from './common';

/** A laboratory's self-declared identity and capabilities (spec: Laboratory capability profile). */
export const laboratories = pgTable('laboratories', {
  id: id(),
  displayName: text('display_name').notNull(),
  legalName: text('legal_name').notNull(),
  operatingName: text('operating_name').notNull(),
  // Certification identifiers are self-declared and reported with state `not_modeled`, never verified.
  certificationIdentifiers: text('certification_identifiers').array().notNull().default([]),
  jurisdictions: text('jurisdictions').array().notNull().default([]),
  serviceGeography: text('service_geography').array().notNull().default([]),
  collectionMethods: text('collection_methods').array().notNull().default([]),
  collectionModes: text('collection_modes').array().notNull().default([]),
  specimenCategories: text('specimen_categories').array().notNull().default([]),
  codingSystemsSupplied: text('coding_systems_supplied').array().notNull().default([]),
  createdAt: createdAt(),
});
