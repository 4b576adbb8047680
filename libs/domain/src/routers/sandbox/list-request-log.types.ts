import { z } from 'zod';
import { oneLineCharacters, queryInteger, strictInput, textSchema } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { REQUEST_LOG_DEFAULT_LIMIT, REQUEST_LOG_MAX_LIMIT } from '../../request-log/request-log';
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
      'Every partner REST request your API client made with a sandbox key in the last 7 days (curl, `lop`, your integration, and the sandbox console\'s actions, which stand for REST routes): time, method, route template, status, error code, request_id, duration and key prefix. Without `after`, the latest entries; with it, the entries logged after it (oldest first), so `lop logs tail` polls from `next_cursor`. Entries are written in batches a second or so after the response. Production keys get 403 `forbidden` (`details[].issue` `production_key`): production requests are never logged. Reads of this route are not logged themselves. A cursor is bound to its API client and environment; another\'s is 400 `invalid_request` with `details[].issue` `invalid_cursor`.',
  },
};
export const listRequestLogInput = strictInput({
  after: textSchema(64).optional().meta({ description: 'The next_cursor of a previous response; omit to start from the latest entries.' }),
  status_class: statusClassSchema.optional(),
  route: z.string().min(1).max(200).check(oneLineCharacters).optional().meta({ description: 'A route template exactly as the OpenAPI document spells it, e.g. `/v1/orders/{orderId}`.' }),
  request_id: z.string().min(1).max(64).check(oneLineCharacters).optional().meta({ description: 'One request\'s request_id.' }),
  limit: queryInteger({ min: 1, max: REQUEST_LOG_MAX_LIMIT, default: REQUEST_LOG_DEFAULT_LIMIT }).meta({ description: `Page size, 1 to ${REQUEST_LOG_MAX_LIMIT} in plain decimal digits; default ${REQUEST_LOG_DEFAULT_LIMIT}.` }),
});
export const listRequestLogOutput = envelopeOf(requestLogPageSchema);
