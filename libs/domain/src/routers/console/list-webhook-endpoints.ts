import { listWebhookEndpoints as listEndpoints } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { listWebhookEndpointsInput, listWebhookEndpointsMeta, listWebhookEndpointsOutput } from './list-webhook-endpoints.types';

/** The caller's sandbox webhook endpoints with delivery counts, never their secrets. (sandbox console only) */
export const listWebhookEndpoints = partnerProcedure(listWebhookEndpointsMeta)
  .input(listWebhookEndpointsInput)
  .output(listWebhookEndpointsOutput)
  .query(async ({ ctx }) => ok(ctx, await listEndpoints(ctx.db, ctx.caller)));
