import { z } from 'zod';
import { oneLineCharacters, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { requestLogDetailSchema } from '../../request-log/request-log.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the console's detail view of one logged request, over tRPC only.
export const getRequestLogEntryMeta: PartnerProcedureMeta = { scope: 'events:read' };
export const getRequestLogEntryInput = strictInput({ request_id: z.string().min(1).max(64).check(oneLineCharacters) });
export const getRequestLogEntryOutput = envelopeOf(requestLogDetailSchema);
