import { z } from 'zod';
import { pathId, strictInput, textSchema } from '../../common-schemas';
import { synchronousFirst } from '../../http/envelope';
import { fhirBundleSchema, FHIR_CONTENT_TYPE } from '../../results/fhir.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const getResultFhirMeta: PartnerProcedureMeta = {
  reads: 'replica',
  audit: { orderId: 'orderId', resourceId: 'resultId' },
  scope: 'results:read',
  errors: ['not_found', 'not_acceptable'],
  responseContentType: FHIR_CONTENT_TYPE,
  openapi: {
    method: 'GET',
    path: '/v1/orders/{orderId}/results/{resultId}/fhir',
    tags: ['Results'],
    summary: 'Read one result version as FHIR R4',
    description:
      'The released version as a FHIR R4 `Bundle` (type `collection`): one `DiagnosticReport`, one `Observation` per observation and the `Specimen` when known. The response is the FHIR resource itself (`Content-Type: application/fhir+json; fhirVersion=4.0`), not the partner envelope; `X-Request-Id` is sent as on every route, and failures keep the partner error envelope and codes. FHIR JSON only: an `Accept` or `_format` that allows neither `application/fhir+json` nor `application/json` is 406 `not_acceptable`. Values are exactly as supplied: a plain decimal as `valueQuantity` (its digits as sent, the unit as supplied), anything else `valueString`; codes are in the laboratory’s own code system (no LOINC is ever derived); lineage is the status (`preliminary`, `final`, `corrected`, `amended`; in a correction only the changed observations are `corrected`) with replaces/superseded-by links; the DiagnosticReport and each Observation carry an identifier that is the same across versions, to update a FHIR store by; the subject is your `external_subject_id` only. Validates against the R4 base definitions; no profile (US Core included) is claimed. Authorization is the result’s own: an unreleased, unknown or another client’s version is 404. Mapping: docs/fhir.md.',
  },
};
export const getResultFhirInput = strictInput({
  orderId: pathId('Order identifier.'),
  resultId: pathId('Result version identifier.'),
  // FHIR's own parameters (R4 http.html#parameters), so a FHIR client's request is understood.
  _format: textSchema(200).optional().meta({ description: 'FHIR’s `_format`: `json`, `application/json` or `application/fhir+json`; any other media type is 406 `not_acceptable`. Overrides `Accept`.' }),
  _pretty: z.enum(['true', 'false']).optional().meta({ description: 'FHIR’s `_pretty`: `true` indents the JSON for reading.' }),
});
export const getResultFhirOutput = synchronousFirst(fhirBundleSchema);
