import { ok } from '../../http/envelope';
import { listRequestLog as list } from '../../request-log/request-log';
import { partnerProcedure } from '../../trpc';
import { listRequestLogInput, listRequestLogMeta, listRequestLogOutput } from './list-request-log.types';

export const listRequestLog = partnerProcedure(listRequestLogMeta)
  .input(listRequestLogInput)
  .output(listRequestLogOutput)
  .query(async ({ ctx, input }) => {
    const page = await list(ctx.db, ctx.protector, ctx.caller, input);
    return ok(ctx, page, page.next_cursor);
  });
