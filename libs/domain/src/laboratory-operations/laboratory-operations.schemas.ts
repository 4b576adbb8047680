import { z } from 'zod';
import { freeTextCharacters, oneLineCharacters, timestampSchema } from '../common-schemas';
import {
  exceptionCategorySchema,
  exceptionEntityTypeSchema,
  exceptionOwnerRoleSchema,
  exceptionSeveritySchema,
} from '../exceptions/exceptions.schemas';
import { RESULT_PROVENANCES } from '../results/results.schemas';
import { numbersIn, observationNumberMessage, observationTextIssues } from './observation-text';

/** Inputs of the laboratory operations (internal router, admin CLI, sandbox simulator). */

// The same character rule as partner text (common-schemas): what is stored must be storable as sent.
const text = (max: number) => z.string().trim().min(1).max(max).check(oneLineCharacters);
const freeText = (max: number) => z.string().trim().min(1).max(max).check(freeTextCharacters);
const reference = text(190);
const note = freeText(2000);

const orderId = z.uuid();

export const orderOperationInput = z.strictObject({ order_id: orderId });

export const acknowledgeInput = z.strictObject({
  order_id: orderId,
  status: z.enum(['accepted', 'rejected']),
  external_order_ref: reference.optional().meta({ description: "The laboratory system's own reference for the order." }),
  requisition_id: reference.optional(),
  laboratory_reference: reference.optional(),
  /** Why the laboratory rejected the order: operator notes on the exception, never shown to partners. */
  reason: note.optional(),
});

export const failTransmissionInput = z.strictObject({
  order_id: orderId,
  reason: note.optional(),
  source_exception_type: reference.optional(),
  source_adapter_key: reference.optional(),
});

export const acceptInput = z.strictObject({
  order_id: orderId,
  requisition_id: reference.optional(),
  laboratory_reference: reference.optional(),
});

export const collectInput = z.strictObject({
  order_id: orderId,
  specimen_code: reference.optional(),
  specimen_type: text(80).optional().meta({ description: "Defaults to the ordered test's specimen type." }),
  collected_at: timestampSchema.optional(),
});

export const receiveInput = z.strictObject({ order_id: orderId, received_at: timestampSchema.optional() });

export const accessionInput = z.strictObject({
  order_id: orderId,
  accession_number: reference.optional(),
  source_system: reference.optional(),
});

export const rejectSpecimenInput = z.strictObject({ order_id: orderId, reason: freeText(500) });

/**
 * One observation as the laboratory supplied it (spec rule 6): free keys, values as text. LOINC
 * codes are not modeled, and a JSON number is refused where it sits (observation-text.ts says why).
 */
const observation = z
  .record(z.string().min(1).max(100), z.json())
  .refine((o) => Object.keys(o).length > 0, 'an observation needs at least one field')
  .refine((o) => !Object.keys(o).some((k) => k.toLowerCase() === 'loinc'), 'LOINC codes are not modeled: remove the "loinc" field')
  .superRefine((o, ctx) => {
    for (const found of numbersIn(o)) ctx.addIssue({ code: 'custom', path: found.path, input: found.value, message: observationNumberMessage(found.value) });
  })
  .superRefine((o, ctx) => {
    for (const found of observationTextIssues(o)) ctx.addIssue({ code: 'custom', path: found.path, message: found.message, params: { issue: found.issue } });
  });

/** 5 MB of document, as base64. */
const MAX_REPORT_BASE64 = Math.ceil((5 * 1024 * 1024 * 4) / 3) + 4;

export const reportDocumentInput = z.strictObject({
  content_type: z.string().regex(/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i, 'a media type such as application/pdf').max(127),
  content_base64: z.base64().min(4).max(MAX_REPORT_BASE64),
});

/** What `lab record-result --file` reads: the result without its order. */
export const resultRecordBody = z.strictObject({
  source_result_id: reference,
  performing_laboratory: text(200).optional().meta({ description: "Defaults to the ordered test's performing laboratory." }),
  performing_laboratory_system: text(200),
  observations: z.array(observation).min(1).max(1000),
  is_critical: z.boolean().optional(),
  report: reportDocumentInput.optional(),
});
export type ResultRecordBody = z.infer<typeof resultRecordBody>;

export const recordResultInput = resultRecordBody.extend({ order_id: orderId });

export const RELEASE_AS = ['partial', 'final', 'corrected', 'amended'] as const;
export type ReleaseAs = (typeof RELEASE_AS)[number];

export const releaseResultInput = z.strictObject({
  result_id: z.uuid(),
  as: z.enum(RELEASE_AS),
  critical: z.boolean().optional(),
  provenance: z.enum(RESULT_PROVENANCES).optional(),
});

export const flagCriticalInput = z.strictObject({ result_id: z.uuid() });

export const openExceptionInput = z.strictObject({
  order_id: orderId,
  category: exceptionCategorySchema,
  severity: exceptionSeveritySchema.optional(),
  owner_role: exceptionOwnerRoleSchema.optional(),
  entity_type: exceptionEntityTypeSchema.optional(),
  entity_id: z.uuid().optional(),
  retryable: z.boolean().optional(),
  source_exception_type: reference.optional(),
  source_adapter_key: reference.optional(),
  operator_notes: note.optional(),
});
export type OpenExceptionInput = z.infer<typeof openExceptionInput>;

export const resolveExceptionInput = z.strictObject({
  exception_id: z.uuid(),
  resolution_text: note,
  operator_notes: note.optional(),
});

export const showOrderInput = orderOperationInput;
