import { updateWebhookEndpoint as updateEndpoint } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { updateWebhookEndpointInput, updateWebhookEndpointMeta, updateWebhookEndpointOutput } from './update-webhook-endpoint.types';

/** Chooses the event types a sandbox endpoint receives from now on. (sandbox console only) */
export const updateWebhookEndpoint = partnerProcedure(updateWebhookEndpointMeta)
  .input(updateWebhookEndpointInput)
  .output(updateWebhookEndpointOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await updateEndpoint(ctx.db, ctx.caller, input.subscription_id, input, ctx.requestId)));
