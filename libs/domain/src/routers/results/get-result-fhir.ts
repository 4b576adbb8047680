import { getResultFhir as get } from '../../results/fhir';
import { FHIR_CONTENT_TYPE } from '../../results/fhir.schemas';
import { scopedProcedure } from '../../trpc';
import { getResultFhirInput, getResultFhirMeta, getResultFhirOutput } from './get-result-fhir.types';

/** The FHIR resource itself, not the envelope: the media type is FHIR's (errors keep the envelope). */
export const getResultFhir = scopedProcedure('results:read')
  .meta(getResultFhirMeta)
  .input(getResultFhirInput)
  .output(getResultFhirOutput)
  .query(async ({ ctx, input }) => {
    const bundle = await get(ctx.db, ctx.caller, input.orderId, input.resultId);
    ctx.response.headers['Content-Type'] = FHIR_CONTENT_TYPE;
    return bundle;
  });
