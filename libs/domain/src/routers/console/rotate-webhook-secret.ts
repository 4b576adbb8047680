import { rotateWebhookSecret as rotateSecret } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { rotateWebhookSecretInput, rotateWebhookSecretMeta, rotateWebhookSecretOutput } from './rotate-webhook-secret.types';

/** Replaces the signing secret of a sandbox endpoint; the new one is returned this once and the old one stops working at once. (sandbox console only) */
export const rotateWebhookSecret = partnerProcedure(rotateWebhookSecretMeta)
  .input(rotateWebhookSecretInput)
  .output(rotateWebhookSecretOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await rotateSecret(ctx.db, ctx.protector, ctx.caller, input.subscription_id, ctx.requestId)));
