import { z } from 'zod';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { timestampSchema } from '../common-schemas';

/** How a released version relates to the lineage: the first release, a later partial/final, a correction or an amendment. */
export const resultVersionTypeSchema = z.enum(['initial', 'update', 'correction', 'amendment']).meta({ id: 'ResultVersionType' });
/** The clinical completeness of a released version. */
export const resultStateSchema = z.enum(['partial', 'final', 'corrected', 'amended']).meta({ id: 'ResultState' });
/** Partners only ever see released versions; `recorded` versions exist for operators alone. */
export const RESULT_STATUSES = ['recorded', 'released'] as const;
export const resultStatusSchema = z.enum(['released']).meta({ id: 'ResultStatus' });
export const pendingReasonSchema = z
  .enum(['not_yet_released', 'update_not_yet_released'])
  .meta({ id: 'ResultPendingReason' });

export type ResultVersionType = z.infer<typeof resultVersionTypeSchema>;
export type ResultState = z.infer<typeof resultStateSchema>;
export type ResultStatus = (typeof RESULT_STATUSES)[number];
export type PendingReason = z.infer<typeof pendingReasonSchema>;

/** Which events a released version's provenance names (event data `result_provenance`). */
export const RESULT_PROVENANCES = ['laboratory_release', 'sandbox_simulation'] as const;
export type ResultProvenance = (typeof RESULT_PROVENANCES)[number];

export const observationSchema = z
  .looseObject({
    loinc: z.literal('not_modeled').meta({ description: 'Observation-level LOINC codes are not modeled; no code is ever derived.' }),
  })
  .meta({
    id: 'Observation',
    description:
      'One observation exactly as the laboratory supplied it (analyte, value, unit, reference interval, flags), character for character: values are text ("1.50" stays "1.50"; never a JSON number), no rounding, no unit conversion.',
  });

export const resultVersionSchema = z
  .object({
    result_id: z.uuid(),
    order_id: z.uuid(),
    accession_id: z.uuid().nullable(),
    panel_item_id: z.uuid().meta({ description: 'The catalog item (test or panel) the result answers.' }),
    accession_number: z.string().nullable(),
    version: z.number().int().min(1),
    version_type: resultVersionTypeSchema,
    state: resultStateSchema,
    status: resultStatusSchema,
    performing_laboratory: z.string(),
    performing_laboratory_system: z.string(),
    source_result_id: z.string().meta({ description: "The laboratory's own identifier of this result." }),
    supersedes_result_id: z.uuid().nullable(),
    is_critical: z.boolean(),
    released_at: timestampSchema,
    observations: z.array(observationSchema),
  })
  .meta({ id: 'ResultVersion', description: 'One released, immutable version of the order’s result.' });
export type ResultVersion = z.infer<typeof resultVersionSchema>;

export const resultLineageEntrySchema = z
  .object({
    result_id: z.uuid(),
    version: z.number().int().min(1),
    version_type: resultVersionTypeSchema,
    state: resultStateSchema,
    released_at: timestampSchema,
    supersedes_result_id: z.uuid().nullable(),
    superseded_by_result_id: z.uuid().nullable(),
    is_current: z.boolean(),
  })
  .meta({ id: 'ResultLineageEntry' });

export const resultCollectionSchema = z
  .object({
    order_id: z.uuid(),
    pending: z.boolean().meta({ description: 'True while a result is expected but not released, or a newer version awaits release.' }),
    pending_reason: pendingReasonSchema.nullable().meta({ description: 'Null when not pending.' }),
    current_result_id: z.uuid().nullable().meta({ description: 'The highest released version: treat it as current.' }),
    current_version: z.number().int().nullable(),
    version_lineage: z.array(resultLineageEntrySchema).meta({ description: 'Every released version, oldest first; superseded versions stay listed and retrievable.' }),
    results: z.array(resultVersionSchema).meta({ description: 'Released version records, oldest first.' }),
  })
  .meta({ id: 'ResultCollection' });
export type ResultCollection = z.infer<typeof resultCollectionSchema>;

export const reportStateSchema = z.enum(['available']).meta({ id: 'ReportState' });

export const reportAvailabilitySchema = z
  .object({
    order_id: z.uuid(),
    result_id: z.uuid(),
    report: z.object({
      available: z.boolean(),
      state: reportStateSchema,
      reason: z.string(),
      retrieval_path: z.string().meta({
        description:
          `Relative to base_url (\`{origin}${PARTNER_BASE_PATH}\`), so it starts with \`/v1/\`: follow \`{base_url}{retrieval_path}\`. A client generated from this document takes the bare origin as its base URL (the paths here carry \`${PARTNER_BASE_PATH}/v1\`), so with it prefix \`${PARTNER_BASE_PATH}\`: \`fetch(origin + '${PARTNER_BASE_PATH}' + retrieval_path, { headers: { Authorization } })\`. It names a retrieval record issued on the server to the API key that asked. Valid for five minutes, only with that same key in \`Authorization\`, and re-checked on use (key, client, program, environment, order, released version). It carries no signature or token: not a permanent, signed or shareable link.`,
      }),
    }),
  })
  .meta({ id: 'ReportAvailability' });
export type ReportAvailability = z.infer<typeof reportAvailabilitySchema>;

export const reportDocumentSchema = z
  .object({
    order_id: z.uuid(),
    result_id: z.uuid(),
    content_type: z.string().meta({ description: 'Media type the laboratory supplied, e.g. application/pdf.' }),
    content_base64: z.string().meta({ description: 'The document, base64-encoded, exactly as the laboratory supplied it.' }),
  })
  .meta({ id: 'ReportDocument' });
export type ReportDocument = z.infer<typeof reportDocumentSchema>;
