import { disableWebhookEndpoint as disableEndpoint } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { disableWebhookEndpointInput, disableWebhookEndpointMeta, disableWebhookEndpointOutput } from './disable-webhook-endpoint.types';

/** Disables a sandbox endpoint: no new deliveries, pending ones cancelled. (sandbox console only) */
export const disableWebhookEndpoint = partnerProcedure(disableWebhookEndpointMeta)
  .input(disableWebhookEndpointInput)
  .output(disableWebhookEndpointOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await disableEndpoint(ctx.db, ctx.caller, input.subscription_id, ctx.requestId)));
