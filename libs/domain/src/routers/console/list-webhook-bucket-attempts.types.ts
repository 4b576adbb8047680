import { z } from 'zod';
import { strictInput, timestampSchema } from '../../common-schemas';
import { consoleWebhookBucketAttemptsSchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const listWebhookBucketAttemptsMeta: PartnerProcedureMeta = { scope: 'events:read' };
export const listWebhookBucketAttemptsInput = strictInput({
  subscription_id: z.uuid(),
  bucket_start: timestampSchema.meta({ description: 'The start of one of the health view’s hours (a whole UTC hour within the last 24).' }),
});
export const listWebhookBucketAttemptsOutput = envelopeOf(consoleWebhookBucketAttemptsSchema);
