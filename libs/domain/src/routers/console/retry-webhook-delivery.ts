import { retryWebhookDeliveryNow as retryNow } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { retryWebhookDeliveryInput, retryWebhookDeliveryMeta, retryWebhookDeliveryOutput } from './retry-webhook-delivery.types';

/** Attempts a delivery that waits for its next retry at once. (sandbox console only) */
export const retryWebhookDelivery = partnerProcedure(retryWebhookDeliveryMeta)
  .input(retryWebhookDeliveryInput)
  .output(retryWebhookDeliveryOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await retryNow(ctx.db, ctx.caller, input.delivery_id)));
