import { createWebhookEndpoint as createEndpoint } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { webhookSettingsOf } from './webhook-settings';
import { partnerProcedure } from '../../trpc';
import { createWebhookEndpointInput, createWebhookEndpointMeta, createWebhookEndpointOutput } from './create-webhook-endpoint.types';

/** Registers a sandbox endpoint (same destination guard as the control plane); the signing secret is returned this once. (sandbox console only) */
export const createWebhookEndpoint = partnerProcedure(createWebhookEndpointMeta)
  .input(createWebhookEndpointInput)
  .output(createWebhookEndpointOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await createEndpoint(ctx.db, ctx.protector, ctx.caller, input, webhookSettingsOf(ctx), ctx.requestId)));
