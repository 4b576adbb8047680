import { ok } from '../../http/envelope';
import { getReportDocument as get } from '../../results/reports';
import { partnerProcedure } from '../../trpc';
import { getReportDocumentInput, getReportDocumentMeta, getReportDocumentOutput } from './get-report-document.types';

export const getReportDocument = partnerProcedure(getReportDocumentMeta)
  .input(getReportDocumentInput)
  .output(getReportDocumentOutput)
  .query(async ({ ctx, input }) => {
    const document = await get(ctx.db, ctx.caller, input);
    ctx.response.headers['Cache-Control'] = 'no-store';
    return ok(ctx, document);
  });
