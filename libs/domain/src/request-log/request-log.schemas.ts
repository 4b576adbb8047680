import { z } from 'zod';
import { REQUEST_LOG_SOURCES } from '@lop/contract';

export const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;
export const statusClassSchema = z.enum(STATUS_CLASSES).meta({ id: 'StatusClass' });
export const requestLogSourceSchema = z.enum(REQUEST_LOG_SOURCES).meta({ id: 'RequestLogSource' });

export const requestLogEntrySchema = z
  .object({
    request_id: z.string().meta({ description: 'The request_id the response carried (X-Request-Id).' }),
    occurred_at: z.string().meta({ description: 'When the response finished (ISO 8601, UTC).' }),
    method: z.string().meta({ example: 'GET' }),
    route: z.string().meta({ description: 'The route template, never the path with its identifiers.', example: '/v1/orders/{orderId}' }),
    status: z.int().meta({ example: 200 }),
    error_code: z.string().nullable().meta({ description: 'The error envelope\'s `error.code` for a failure; null for a success.' }),
    duration_ms: z.int().meta({ description: 'Milliseconds from receiving the request to finishing its response.' }),
    key_prefix: z.string().meta({ description: 'The display prefix of the key used: `lop_test_` and the next four characters, never the key.' }),
    source: requestLogSourceSchema,
  })
  .meta({ id: 'RequestLogEntry' });
export type RequestLogEntry = z.infer<typeof requestLogEntrySchema>;

export const requestLogPageSchema = z
  .object({
    entries: z.array(requestLogEntrySchema).meta({ description: 'Oldest first.' }),
    next_cursor: z.string().meta({ description: 'Pass as `after` to read what was logged after this page; always present, so you can poll from it.' }),
    has_more: z.boolean(),
  })
  .meta({ id: 'RequestLogPage' });
export type RequestLogPage = z.infer<typeof requestLogPageSchema>;

export const requestLogDetailSchema = requestLogEntrySchema
  .extend({
    request_body: z.unknown().nullable().meta({ description: 'The JSON body sent, through the route\'s allow-list and cut past 8 KB; null when none. Only ids, enums, numbers, booleans and timestamps are kept as sent; any other value (your text, unknown fields) is `{"$redacted": "string" | "object" | "array" | "number" | "boolean", "length"?}` (docs/request-log.md).' }),
    response_body: z.unknown().nullable().meta({ description: 'The JSON body answered, through the same allow-list (results and FHIR bundles as shape only; an error\'s sentences with anything you sent blanked) and cut past 8 KB.' }),
    bodies_withheld: z.boolean().meta({ description: 'True when the bodies are not shown: see `bodies_withheld_reason`.' }),
    bodies_withheld_reason: z
      .enum(['missing_scope', 'order_not_readable'])
      .nullable()
      .meta({
        description:
          'Why the bodies are withheld, null when they are shown: `missing_scope` — the key reading the log lacks the scope the route needs; `order_not_readable` — the request was about an order this API client may no longer read (its program was withdrawn), which every read of that order answers 404.',
      }),
  })
  .meta({ id: 'RequestLogDetail' });
export type RequestLogDetail = z.infer<typeof requestLogDetailSchema>;
