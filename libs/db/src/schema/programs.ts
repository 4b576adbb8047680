import { boolean, index, integer, numeric, pgEnum, pgTable, primaryKey, text, unique, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, environmentEnum, id } from './common';
import { apiClients } from './clients';
import { laboratories } from './laboratories';

export const programStatusEnum = pgEnum('program_status', ['active', 'inactive']);
export const catalogItemStatusEnum = pgEnum('catalog_item_status', ['active', 'inactive']);

/** A commercial ordering program of the laboratory, defined per environment. */
export const programs = pgTable(
  'programs',
  {
    id: id(),
    laboratoryId: uuid('laboratory_id')
      .notNull()
      .references(() => laboratories.id),
    environment: environmentEnum('environment').notNull(),
    name: text('name').notNull(),
    status: programStatusEnum('status').notNull().default('active'),
    currency: text('currency').notNull(),
    jurisdiction: text('jurisdiction').notNull(),
    // Regions where the program is serviceable; drives the spec's location rule.
    serviceGeography: text('service_geography').array().notNull().default([]),
    collectionMethods: text('collection_methods').array().notNull().default([]),
    createdAt: createdAt(),
  },
  (t) => [index('programs_laboratory_env_idx').on(t.laboratoryId, t.environment)],
);

/** Which API client may use which program. The program row fixes the environment. */
export const programGrants = pgTable(
  'program_grants',
  {
    clientId: uuid('client_id')
      .notNull()
      .references(() => apiClients.id),
    programId: uuid('program_id')
      .notNull()
      .references(() => programs.id),
    environment: environmentEnum('environment').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.programId] }), index('program_grants_client_env_idx').on(t.clientId, t.environment)],
);

/** An orderable test as offered in one program. */
export const catalogItems = pgTable(
  'catalog_items',
  {
    id: id(),
    programId: uuid('program_id')
      .notNull()
      .references(() => programs.id),
    labOrderableId: uuid('lab_orderable_id').notNull(),
    labTestCode: text('lab_test_code').notNull(),
    code: text('code').notNull(),
    description: text('description').notNull(),
    externalCode: text('external_code').notNull(),
    name: text('name').notNull(),
    kind: text('kind').notNull(),
    performingLaboratory: text('performing_laboratory').notNull(),
    specimenType: text('specimen_type').notNull(),
    container: text('container').notNull(),
    minVolumeMl: numeric('min_volume_ml', { mode: 'number' }).notNull(),
    // Collection methods this test supports; empty means any the program allows.
    collectionMethods: text('collection_methods').array().notNull().default([]),
    status: catalogItemStatusEnum('status').notNull().default('active'),
    sortOrder: integer('sort_order').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('catalog_items_program_code_idx').on(t.programId, t.code)],
);

export const authorityStateEnum = pgEnum('authority_state', ['configured', 'not_configured']);

/**
 * Ordering requirements for a program, optionally narrowed to one item and/or one region.
 * The most specific matching row applies; a facet that is `not_configured` requires nothing.
 */
export const requirementProfiles = pgTable(
  'requirement_profiles',
  {
    id: id(),
    programId: uuid('program_id')
      .notNull()
      .references(() => programs.id),
    itemId: uuid('item_id').references(() => catalogItems.id),
    region: text('region'),
    jurisdiction: text('jurisdiction').notNull(),
    requirementState: text('requirement_state').notNull().default('active'),

    subjectAuthorityState: authorityStateEnum('subject_authority_state').notNull().default('not_configured'),
    subjectRequiredPatientFields: text('subject_required_patient_fields').array().notNull().default([]),

    orderAuthorityState: authorityStateEnum('order_authority_state').notNull().default('not_configured'),
    orderRequiredFields: text('order_required_fields').array().notNull().default([]),

    providerAuthorityState: authorityStateEnum('provider_authority_state').notNull().default('not_configured'),
    providerRequirement: text('provider_requirement').notNull().default('not_required'),
    providerRequiredFields: text('provider_required_fields').array().notNull().default([]),

    aoeAuthorityState: authorityStateEnum('aoe_authority_state').notNull().default('not_configured'),

    clinicalPolicy: text('clinical_policy').notNull().default('not_configured'),
    clinicalOrderingModel: text('clinical_ordering_model').notNull().default('not_configured'),
    clinicalReview: text('clinical_review').notNull().default('not_configured'),
    clinicalIntakeRequired: boolean('clinical_intake_required').notNull().default(false),

    collectionMethods: text('collection_methods').array().notNull().default([]),
    collectionRegions: text('collection_regions').array().notNull().default([]),

    billingAuthorityState: authorityStateEnum('billing_authority_state').notNull().default('not_configured'),
    billingModeRequired: boolean('billing_mode_required').notNull().default(false),
    billingModes: text('billing_modes').array().notNull().default([]),
    createdAt: createdAt(),
  },
  (t) => [
    unique('requirement_profiles_scope_key').on(t.programId, t.itemId, t.region).nullsNotDistinct(),
  ],
);

/** Ask-at-order-entry questions of a requirements profile. */
export const aoeQuestions = pgTable(
  'aoe_questions',
  {
    id: id(),
    requirementProfileId: uuid('requirement_profile_id')
      .notNull()
      .references(() => requirementProfiles.id, { onDelete: 'cascade' }),
    questionKey: text('question_key').notNull(),
    prompt: text('prompt').notNull(),
    answerType: text('answer_type').notNull(),
    options: text('options').array().notNull().default([]),
    required: boolean('required').notNull().default(false),
    version: integer('version').notNull().default(1),
    sortOrder: integer('sort_order').notNull().default(0),
  },
  (t) => [uniqueIndex('aoe_questions_profile_key_idx').on(t.requirementProfileId, t.questionKey)],
);
