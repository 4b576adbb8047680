import { ok } from '../../http/envelope';
import { getRequestLogEntry as get } from '../../request-log/request-log';
import { partnerProcedure } from '../../trpc';
import { getRequestLogEntryInput, getRequestLogEntryMeta, getRequestLogEntryOutput } from './get-request-log-entry.types';

/** One logged sandbox request with its redacted bodies (sandbox console only). */
export const getRequestLogEntry = partnerProcedure(getRequestLogEntryMeta)
  .input(getRequestLogEntryInput)
  .output(getRequestLogEntryOutput)
  .query(async ({ ctx, input }) => ok(ctx, await get(ctx.db, ctx.caller, input.request_id)));
