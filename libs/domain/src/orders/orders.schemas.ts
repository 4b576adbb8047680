import {
  ackStatusSchema,
  environmentSchema,
  lifecycleDetailSchema,
  lifecycleSchema,
  LIMITS,
  nextActionSchema,
  requisitionStateSchema,
  specimenStatusSchema,
  transmissionStatusSchema,
} from '@lop/contract';
import { z } from 'zod';
import { freeTextSchema, textSchema as text, timestampSchema } from '../common-schemas';

/** Personal fields: accepted, encrypted at rest, never returned, logged or put in events. */
export const PATIENT_FIELDS = [
  'legal_first_name',
  'legal_last_name',
  'date_of_birth',
  'sex_at_birth',
  'phone',
  'email',
  'region',
  'address_line1',
  'address_line2',
  'city',
  'postal_code',
  'country',
] as const;

export const patientSchema = z
  .strictObject({
    legal_first_name: text(100).optional(),
    legal_last_name: text(100).optional(),
    date_of_birth: z.iso.date().optional().meta({ description: 'YYYY-MM-DD' }),
    sex_at_birth: z.enum(['female', 'male', 'intersex', 'unknown']).optional(),
    phone: text(40).optional(),
    email: z.email().max(254).optional(),
    region: text(LIMITS.region).optional(),
    address_line1: text(200).optional(),
    address_line2: text(200).optional(),
    city: text(100).optional(),
    postal_code: text(20).optional(),
    country: z.string().regex(/^[A-Z]{2}$/, 'ISO 3166-1 alpha-2 country code').optional(),
  })
  .meta({ id: 'Patient', description: 'Personal data: stored encrypted, never returned.' });

export const orderingProviderSchema = z
  .strictObject({
    provider_reference: z.uuid().optional(),
    name: text(200).optional(),
    npi: z.string().regex(/^[0-9]{10}$/, 'a 10-digit National Provider Identifier').optional(),
  })
  .meta({ id: 'OrderingProvider' });

export const aoeAnswerSchema = z.strictObject({ question_key: text(100), answer: freeTextSchema(1000) }).meta({ id: 'AoeAnswer' });

export const createOrderBodySchema = z
  .strictObject({
    external_order_id: text(LIMITS.externalOrderId),
    program_id: z.uuid(),
    item_id: z.uuid(),
    external_subject_id: text(LIMITS.externalSubjectId),
    collection: text(LIMITS.collection).meta({ description: 'Collection method, e.g. in_person_draw.' }),
    region: text(LIMITS.region).optional(),
    patient: patientSchema.optional(),
    ordering_provider: orderingProviderSchema.optional(),
    aoe_answers: z.array(aoeAnswerSchema).max(50).optional(),
    clinical_notes: freeTextSchema(LIMITS.clinicalNotes).optional(),
    billing_mode: text(LIMITS.billingMode).optional(),
    requested_collection_at: timestampSchema.optional(),
    collection_location: text(LIMITS.collectionLocation).optional(),
  })
  .meta({ id: 'OrderCreateRequest' });
export type CreateOrderBody = z.infer<typeof createOrderBodySchema>;

export const specimenSchema = z
  .object({
    specimen_id: z.uuid(),
    specimen_code: z.string(),
    specimen_type: z.string(),
    status: specimenStatusSchema,
    accession_number: z.string().nullable(),
    rejection_reason: z.string().nullable(),
    collected_at: timestampSchema.nullable(),
    received_at: timestampSchema.nullable(),
    recollection_of: z.uuid().nullable(),
  })
  .meta({ id: 'Specimen' });

export const orderSchema = z
  .object({
    order_id: z.uuid(),
    external_order_id: z.string(),
    program_id: z.uuid(),
    item_id: z.uuid(),
    external_subject_id: z.string(),
    environment: environmentSchema,
    lifecycle: lifecycleSchema,
    next_action: nextActionSchema,
    lifecycle_detail: lifecycleDetailSchema,
    requisition: z.object({
      state: requisitionStateSchema,
      requisition_id: z.string().nullable(),
      laboratory_reference: z.string().nullable(),
      created_at: timestampSchema.nullable(),
      document: z.object({ state: z.literal('not_modeled') }),
    }),
    accession: z.object({
      accession_number: z.string().nullable(),
      source_system: z.string().nullable(),
      accessioned_at: timestampSchema.nullable(),
      received_at: timestampSchema.nullable(),
    }),
    specimens: z.array(specimenSchema),
    transmission: z.object({
      status: transmissionStatusSchema,
      ack_status: ackStatusSchema,
      external_order_ref: z.string().nullable(),
      attempt_no: z.number().int(),
      sent_at: timestampSchema.nullable(),
      acknowledged_at: timestampSchema.nullable(),
    }),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .meta({ id: 'Order', description: 'An order. Personal data sent at creation is never returned.' });
export type Order = z.infer<typeof orderSchema>;
