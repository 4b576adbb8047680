import { getWebhookEndpointHealth as endpointHealth } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { getWebhookEndpointHealthInput, getWebhookEndpointHealthMeta, getWebhookEndpointHealthOutput } from './get-webhook-endpoint-health.types';

/** A sandbox endpoint's attempts over the last 24 hours, hour by hour: success rate and latency. (sandbox console only) */
export const getWebhookEndpointHealth = partnerProcedure(getWebhookEndpointHealthMeta)
  .input(getWebhookEndpointHealthInput)
  .output(getWebhookEndpointHealthOutput)
  .query(async ({ ctx, input }) => ok(ctx, await endpointHealth(ctx.db, ctx.caller, input.subscription_id)));
