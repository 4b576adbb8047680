import { recoverWebhookDeliveries as recover } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { recoverWebhookDeliveriesInput, recoverWebhookDeliveriesMeta, recoverWebhookDeliveriesOutput } from './recover-webhook-deliveries.types';

/** Replays every dead letter of a sandbox endpoint since a time (the Svix \"recover\"). (sandbox console only) */
export const recoverWebhookDeliveries = partnerProcedure(recoverWebhookDeliveriesMeta)
  .input(recoverWebhookDeliveriesInput)
  .output(recoverWebhookDeliveriesOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await recover(ctx.db, ctx.caller, input.subscription_id, new Date(input.since))));
