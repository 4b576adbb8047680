import { listWebhookBucketAttempts as bucketAttempts } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { listWebhookBucketAttemptsInput, listWebhookBucketAttemptsMeta, listWebhookBucketAttemptsOutput } from './list-webhook-bucket-attempts.types';

/** The attempts behind one hour of a sandbox endpoint's health view, each naming its delivery. (sandbox console only) */
export const listWebhookBucketAttempts = partnerProcedure(listWebhookBucketAttemptsMeta)
  .input(listWebhookBucketAttemptsInput)
  .output(listWebhookBucketAttemptsOutput)
  .query(async ({ ctx, input }) => ok(ctx, await bucketAttempts(ctx.db, ctx.caller, input.subscription_id, new Date(input.bucket_start))));
