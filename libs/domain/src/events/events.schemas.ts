import { environmentSchema, eventTypeSchema, lifecycleSchema, nextActionSchema } from '@lop/contract';
import { z } from 'zod';
import { queryInteger, textSchema, timestampSchema } from '../common-schemas';

/**
 * The allow-list of `data` keys (spec § Events). Strict: an extra key fails validation, so
 * analyte values, demographics, documents or secrets can never slip into an event.
 */
export const eventDataSchema = z
  .strictObject({
    order_id: z.uuid(),
    external_order_id: z.string(),
    program_id: z.uuid(),
    client_id: z.uuid(),
    environment: environmentSchema,
    lifecycle: lifecycleSchema.optional(),
    next_action: nextActionSchema.optional(),
    specimen_state: z.string().optional(),
    result_id: z.uuid().optional(),
    result_version: z.number().int().optional(),
    result_provenance: z.string().optional(),
    result_is_critical: z.boolean().optional(),
    action_required_code: z
      .string()
      .optional()
      .meta({
        description:
          'On integration.action_required: the category of the exception to act on. On order.updated / order.cancelled: present when what you must act on changed — the category of the newest exception still yours, or `none`.',
      }),
    links: z.record(z.string(), z.string().regex(/^\//)).optional().meta({ description: 'Relative API paths to re-read the authoritative state.' }),
  })
  .meta({ id: 'EventData', description: 'Identifiers and coarse state only; read details from the API.' });
export type EventData = z.infer<typeof eventDataSchema>;

export const eventSchema = z
  .object({
    event_id: z.string().meta({ description: 'Unique; deduplicate on it.' }),
    type: eventTypeSchema,
    version: z.number().int().meta({ description: 'Event payload version, an integer, currently 1: the schema version of this object. Not the API version (`v1`, the `x-partner-api-version` header) nor the service build (health `version`).' }),
    occurred_at: timestampSchema.meta({
      format: 'date-time',
      description:
        'When the underlying fact happened: the collection or receipt time the laboratory reported, the release time of a result. A fact reported without a time of its own happened when it was recorded. Not the stream order: it can go backwards along the stream; order by `sequence`.',
    }),
    environment: environmentSchema,
    program_id: z.uuid().optional(),
    sequence: z.number().int().meta({ description: 'Dense, increasing position in your stream (per API client and environment); alone gives the order of events.' }),
    data: eventDataSchema,
  })
  .meta({ id: 'Event', description: 'One event; a webhook delivery body is this same object.' });
export type PartnerEvent = z.infer<typeof eventSchema>;

export const eventPageSchema = z
  .object({
    events: z.array(eventSchema),
    next_cursor: z.string().meta({ description: 'Pass as `cursor` to continue; always present, so you can poll from it later.' }),
    has_more: z.boolean(),
  })
  .meta({ id: 'EventPage' });

export const EVENTS_DEFAULT_LIMIT = 100;
export const EVENTS_MAX_LIMIT = 500;

/**
 * The query of every cursor-paged read of events (events/stream.ts readEventPage), spread into a
 * route's own input: GET /v1/events adds `wait`.
 */
export const eventPageInput = {
  cursor: textSchema(64).optional().meta({ description: 'The next_cursor of a previous response; omit to start from the beginning.' }),
  limit: queryInteger({ min: 1, max: EVENTS_MAX_LIMIT, default: EVENTS_DEFAULT_LIMIT }).meta({ description: `Page size, 1 to ${EVENTS_MAX_LIMIT} in plain decimal digits; default ${EVENTS_DEFAULT_LIMIT}.` }),
};
