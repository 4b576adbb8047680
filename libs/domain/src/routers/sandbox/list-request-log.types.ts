import { z } from 'zod';
import { REQUEST_LOG_METHODS, REQUEST_LOG_QUERY_MAX, REQUEST_LOG_SOURCES, SANDBOX_KEY_PREFIX_PATTERN } from '@lop/contract';
import { oneLineCharacters, queryEnumList, queryInteger, strictInput, textSchema, timestampSchema } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { REQUEST_LOG_DEFAULT_LIMIT, REQUEST_LOG_MAX_LIMIT, REQUEST_LOG_SCAN_MAX } from '../../request-log/request-log';
import { requestLogPageSchema, statusClassSchema } from '../../request-log/request-log.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const listRequestLogMeta: PartnerProcedureMeta = {
  scope: 'events:read',
  openapi: {
    method: 'GET',
    path: '/v1/sandbox/request-log',
    tags: ['Sandbox'],
    summary: 'Read the sandbox request log',
    description:
      `Every partner REST request your API client made with a sandbox key in the last 7 days (curl, \`lop\`, your integration, and the sandbox console's actions, which stand for REST routes): time, method, route template, status, error code, request_id, duration, key prefix and source. Without \`after\`, the latest entries that match the filters; with it, the entries logged after it (oldest first), so \`lop logs tail\` polls from \`next_cursor\`. The filters combine (an entry must match each given): \`status_class\`, \`route\`, \`request_id\`, \`since\` and \`until\`, \`method\`, \`source\`, \`key_prefix\`, and \`q\`, text in the stored bodies. Bodies are stored through an allow-list, so \`q\` finds only what it keeps (the service's ids, enums, numbers, timestamps, field names, error codes): your own text, stored as its type and size, never matches (docs/request-log.md). A read with any filter examines at most ${REQUEST_LOG_SCAN_MAX} logged requests: without \`after\`, the matches among the latest ones (narrow with \`until\` to reach further back); with \`after\`, among the next ones, and a page that did not fill answers \`has_more: true\` with a \`next_cursor\` past them all: keep reading. Entries are written in batches a second or so after the response. Production keys get 403 \`forbidden\` (\`details[].issue\` \`production_key\`): production requests are never logged. Reads of this route are not logged themselves. A cursor is bound to its API client and environment; another's is 400 \`invalid_request\` with \`details[].issue\` \`invalid_cursor\`; an \`until\` not later than \`since\` is 400 \`invalid_request\` with \`details[].issue\` \`out_of_range\`.`,
  },
};
// Each parameter's description sits on the schema itself, not on `.optional()`: trpc-to-openapi
// unwraps the optional, and a description on the wrapper would not reach the document.
export const listRequestLogInput = strictInput({
  after: textSchema(64).meta({ description: 'The next_cursor of a previous response; omit to start from the latest entries.' }).optional(),
  status_class: statusClassSchema.optional(),
  route: z
    .string()
    .min(1)
    .max(200)
    .check(oneLineCharacters)
    .meta({ description: 'A route template exactly as the OpenAPI document spells it, e.g. `/v1/orders/{orderId}`.' })
    .optional(),
  request_id: z.string().min(1).max(64).check(oneLineCharacters).meta({ description: 'One request\'s request_id.' }).optional(),
  since: timestampSchema
    .meta({ description: 'Only entries logged at or after this instant (ISO 8601 with an offset, e.g. `2026-11-28T09:00:00Z`). The log keeps 7 days: an earlier instant reads from its start.' })
    .optional(),
  until: timestampSchema.meta({ description: 'Only entries logged before this instant (ISO 8601 with an offset); later than `since` when both are given.' }).optional(),
  method: queryEnumList(REQUEST_LOG_METHODS, `Only these methods: one or more of ${REQUEST_LOG_METHODS.join(', ')}, comma-separated (\`GET,POST\`).`).optional(),
  source: queryEnumList(
    REQUEST_LOG_SOURCES,
    'Only requests from these sources (`source` of an entry), comma-separated: `rest`, `lop`, `console`. `rest,console` leaves out `lop`\'s own requests (an idle `lop listen` polls the event stream).',
  ).optional(),
  key_prefix: z
    .string()
    .regex(SANDBOX_KEY_PREFIX_PATTERN)
    .meta({ description: 'Only requests made with this key: its display prefix, `lop_test_` and the next four characters (`key_prefix` of an entry).' })
    .optional(),
  q: textSchema(REQUEST_LOG_QUERY_MAX)
    .meta({
      description: `Only entries whose stored request or response body contains this text, ignoring case (1 to ${REQUEST_LOG_QUERY_MAX} characters): an order_id, an error code, a field's name. Bodies are stored through an allow-list, so only what it keeps can be found; your own text (external ids, free text, personal data) is stored as its type and size and never matches. Only entries whose bodies this key may read are searched.`,
    })
    .optional(),
  limit: queryInteger({ min: 1, max: REQUEST_LOG_MAX_LIMIT, default: REQUEST_LOG_DEFAULT_LIMIT }).meta({ description: `Page size, 1 to ${REQUEST_LOG_MAX_LIMIT} in plain decimal digits; default ${REQUEST_LOG_DEFAULT_LIMIT}.` }),
});
export const listRequestLogOutput = envelopeOf(requestLogPageSchema);
