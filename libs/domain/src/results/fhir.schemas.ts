import { z } from 'zod';

/**
 * The FHIR R4 shapes the result view emits (docs/fhir.md), and nothing more: each schema names
 * exactly the elements fhir.ts writes, so the output check and the OpenAPI document describe the
 * real response. Validity against the R4 base definitions is checked in the tests, with Medplum's
 * validator over every bundle the sandbox scenarios can produce.
 */

export const FHIR_CONTENT_TYPE = 'application/fhir+json; fhirVersion=4.0';

/** FHIR has no empty string: every string element holds at least one character. */
const fhirString = z.string().min(1);
const instant = z.string().meta({ description: 'FHIR `instant`: an ISO 8601 timestamp with time zone.' });

export const fhirIdentifierSchema = z
  .object({
    use: z.enum(['usual', 'official', 'secondary']).optional(),
    system: fhirString,
    value: fhirString,
    assigner: z.object({ display: fhirString }).optional(),
  })
  .meta({ id: 'FhirIdentifier' });

/**
 * A FHIR decimal written with the digits the laboratory supplied: JSON's own text for the number,
 * through JSON.rawJSON, so `1.50` is `1.50` in the response bytes (JSON.stringify keeps raw text
 * as it is). A parser reading it gets a number, as R4's JSON form says a decimal is.
 */
export type FhirDecimal = { readonly rawJSON: string };
const rawJson = JSON as unknown as { rawJSON(text: string): FhirDecimal; isRawJSON(value: unknown): value is FhirDecimal };
export const fhirDecimal = (digits: string): FhirDecimal => rawJson.rawJSON(digits);
const fhirDecimalSchema = z
  .custom<FhirDecimal>((value) => rawJson.isRawJSON(value), 'a FHIR decimal written as supplied')
  .meta({ type: 'number', description: 'A FHIR decimal: a JSON number whose digits are exactly the supplied ones (`1.50` stays `1.50`).' });

export const fhirQuantitySchema = z
  .object({
    value: fhirDecimalSchema,
    comparator: z.enum(['<', '<=', '>=', '>']).optional().meta({ description: 'The supplied value’s `<`/`>` prefix.' }),
    unit: fhirString.optional().meta({ description: 'The unit as supplied (`unit`, `units`), character for character.' }),
    system: z.literal('http://unitsofmeasure.org').optional(),
    code: fhirString.optional().meta({ description: 'A UCUM code, only when the laboratory supplied one (`ucum_code`, `ucum`); never derived.' }),
  })
  .meta({ id: 'FhirQuantity' });

export const fhirCodingSchema = z.object({ system: fhirString, code: fhirString, display: fhirString.optional() }).meta({ id: 'FhirCoding' });

const simpleExtension = z.object({
  url: fhirString,
  valueString: fhirString.optional(),
  valueBoolean: z.boolean().optional(),
  valueCode: fhirString.optional(),
});

export const fhirCodeableConceptSchema = z
  .object({
    extension: z.array(simpleExtension).optional().meta({ description: 'Only `data-absent-reason`, when the laboratory supplied neither a code nor a name.' }),
    coding: z.array(fhirCodingSchema).optional(),
    text: fhirString.optional(),
  })
  .meta({ id: 'FhirCodeableConcept' });

/** A logical reference (by identifier) or a reference to another entry of the bundle (`urn:uuid:`). */
export const fhirReferenceSchema = z
  .object({
    reference: fhirString.optional(),
    type: fhirString.optional(),
    identifier: fhirIdentifierSchema.optional(),
    display: fhirString.optional(),
  })
  .meta({ id: 'FhirReference' });

export const fhirExtensionSchema = z
  .object({
    url: fhirString,
    extension: z.array(simpleExtension).optional(),
    valueString: fhirString.optional(),
    valueBoolean: z.boolean().optional(),
    valueReference: fhirReferenceSchema.optional(),
  })
  .meta({ id: 'FhirExtension' });

export const fhirResultStatusSchema = z.enum(['preliminary', 'final', 'corrected', 'amended']).meta({
  id: 'FhirResultStatus',
  description: 'The released version’s state: `partial` → `preliminary`, `final` → `final`, `corrected` → `corrected`, `amended` → `amended`.',
});

export const fhirObservationSchema = z
  .object({
    resourceType: z.literal('Observation'),
    extension: z.array(fhirExtensionSchema).optional(),
    identifier: z.array(fhirIdentifierSchema).meta({ description: 'The analyte of the order, the same in every version: update by it.' }),
    status: fhirResultStatusSchema,
    category: z.array(fhirCodeableConceptSchema),
    code: fhirCodeableConceptSchema,
    subject: fhirReferenceSchema,
    effectiveDateTime: instant.optional(),
    issued: instant,
    valueQuantity: fhirQuantitySchema.optional().meta({ description: 'A value that is a plain decimal (with an optional `<`/`>` prefix), its digits exactly as supplied.' }),
    valueString: fhirString.optional().meta({ description: 'Any other value exactly as the laboratory supplied it, character for character.' }),
    valueBoolean: z.boolean().optional(),
    dataAbsentReason: fhirCodeableConceptSchema.optional(),
    interpretation: z.array(fhirCodeableConceptSchema).optional(),
    note: z.array(z.object({ text: fhirString })).optional(),
    specimen: fhirReferenceSchema.optional(),
    referenceRange: z.array(z.object({ text: fhirString })).optional(),
  })
  .meta({ id: 'FhirObservation', description: 'One observation of the released version (FHIR R4 Observation).' });

export const fhirDiagnosticReportSchema = z
  .object({
    resourceType: z.literal('DiagnosticReport'),
    extension: z.array(fhirExtensionSchema),
    identifier: z.array(fhirIdentifierSchema),
    basedOn: z.array(fhirReferenceSchema),
    status: fhirResultStatusSchema,
    category: z.array(fhirCodeableConceptSchema),
    code: fhirCodeableConceptSchema,
    subject: fhirReferenceSchema,
    effectiveDateTime: instant.optional(),
    issued: instant,
    performer: z.array(fhirReferenceSchema),
    specimen: z.array(fhirReferenceSchema).optional(),
    result: z.array(fhirReferenceSchema),
  })
  .meta({ id: 'FhirDiagnosticReport', description: 'The released result version (FHIR R4 DiagnosticReport).' });

export const fhirSpecimenSchema = z
  .object({
    resourceType: z.literal('Specimen'),
    identifier: z.array(fhirIdentifierSchema),
    accessionIdentifier: fhirIdentifierSchema.optional(),
    type: fhirCodeableConceptSchema,
    subject: fhirReferenceSchema,
    receivedTime: instant.optional(),
    collection: z.object({ collectedDateTime: instant }).optional(),
  })
  .meta({ id: 'FhirSpecimen', description: 'The specimen the result was measured on, when known (FHIR R4 Specimen).' });

export const fhirResourceSchema = z.discriminatedUnion('resourceType', [fhirDiagnosticReportSchema, fhirObservationSchema, fhirSpecimenSchema]);

export const fhirBundleSchema = z
  .object({
    resourceType: z.literal('Bundle'),
    type: z.literal('collection'),
    timestamp: instant.meta({ description: 'When the version was released.' }),
    entry: z.array(
      z.object({
        fullUrl: fhirString.meta({ description: '`urn:uuid:…`, stable for this version: the same on every read.' }),
        resource: fhirResourceSchema,
      }),
    ),
  })
  .meta({
    id: 'FhirResultBundle',
    description:
      'A FHIR R4 Bundle of type `collection`: the DiagnosticReport of one released result version first, then one Observation per observation in the order supplied, then the Specimen when known. The FHIR resource itself, not the partner envelope. Mapping field by field: docs/fhir.md.',
  });

export type FhirBundle = z.infer<typeof fhirBundleSchema>;
export type FhirDiagnosticReport = z.infer<typeof fhirDiagnosticReportSchema>;
export type FhirObservation = z.infer<typeof fhirObservationSchema>;
export type FhirSpecimen = z.infer<typeof fhirSpecimenSchema>;
export type FhirExtension = z.infer<typeof fhirExtensionSchema>;
export type FhirCodeableConcept = z.infer<typeof fhirCodeableConceptSchema>;
export type FhirReference = z.infer<typeof fhirReferenceSchema>;
export type FhirIdentifier = z.infer<typeof fhirIdentifierSchema>;
