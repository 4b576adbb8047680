import { requireFhirJson } from '../../results/fhir-format';
import { getResultFhir as get } from '../../results/fhir';
import { FHIR_CONTENT_TYPE } from '../../results/fhir.schemas';
import { partnerProcedure } from '../../trpc';
import { getResultFhirInput, getResultFhirMeta, getResultFhirOutput } from './get-result-fhir.types';

/**
 * The FHIR resource itself, not the envelope: on REST with FHIR's media type (errors keep the
 * envelope). The console's tRPC door carries the same Bundle inside tRPC's own JSON answer.
 */
export const getResultFhir = partnerProcedure(getResultFhirMeta)
  .input(getResultFhirInput)
  .output(getResultFhirOutput)
  .query(async ({ ctx, input }) => {
    if (ctx.door === 'rest') requireFhirJson(input._format, ctx.headers.accept);
    const bundle = await get(ctx.db, ctx.caller, input.orderId, input.resultId);
    if (ctx.door === 'rest') {
      ctx.response.headers['Content-Type'] = FHIR_CONTENT_TYPE;
      if (input._pretty === 'true') ctx.response.indent = 2;
    }
    return bundle;
  });
