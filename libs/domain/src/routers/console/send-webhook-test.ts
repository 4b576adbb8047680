import { sendWebhookTest as sendTest } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { webhookSettingsOf } from './webhook-settings';
import { partnerProcedure } from '../../trpc';
import { sendWebhookTestInput, sendWebhookTestMeta, sendWebhookTestOutput } from './send-webhook-test.types';

/** Sends a signed test delivery to a sandbox endpoint now and returns it with its attempt. (sandbox console only) */
export const sendWebhookTest = partnerProcedure(sendWebhookTestMeta)
  .input(sendWebhookTestInput)
  .output(sendWebhookTestOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await sendTest(ctx.db, ctx.protector, ctx.caller, input.subscription_id, webhookSettingsOf(ctx), input.event_type)));
