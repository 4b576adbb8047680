import { eventTypeSchema } from '@lop/contract';
import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { consoleWebhookDeliverySchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const sendWebhookTestMeta: PartnerProcedureMeta = { scope: 'events:read', rateBudget: 'webhook_operations' };
export const sendWebhookTestInput = strictInput({
  subscription_id: z.uuid(),
  event_type: eventTypeSchema.optional().meta({ description: 'The type of the test event envelope; default order.created.' }),
});
export const sendWebhookTestOutput = envelopeOf(consoleWebhookDeliverySchema);
