import { resendWebhookDelivery as resend } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { resendWebhookDeliveryInput, resendWebhookDeliveryMeta, resendWebhookDeliveryOutput } from './resend-webhook-delivery.types';

/** Delivers the same event again as a new delivery (a replay); the original is kept as it was. (sandbox console only) */
export const resendWebhookDelivery = partnerProcedure(resendWebhookDeliveryMeta)
  .input(resendWebhookDeliveryInput)
  .output(resendWebhookDeliveryOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await resend(ctx.db, ctx.caller, input.delivery_id)));
