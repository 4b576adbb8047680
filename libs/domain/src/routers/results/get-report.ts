import { ok } from '../../http/envelope';
import { getReportAvailability } from '../../results/reports';
import { partnerProcedure } from '../../trpc';
import { getReportInput, getReportMeta, getReportOutput } from './get-report.types';

export const getReport = partnerProcedure(getReportMeta)
  .input(getReportInput)
  .output(getReportOutput)
  .query(async ({ ctx, input }) => {
    const availability = await getReportAvailability(ctx.db, ctx.caller, input.orderId, input.resultId);
    // The retrieval path is short-lived: no cache may keep it.
    ctx.response.headers['Cache-Control'] = 'no-store';
    return ok(ctx, availability);
  });
