import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { consoleWebhookDeliverySchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const retryWebhookDeliveryMeta: PartnerProcedureMeta = { scope: 'events:read', rateBudget: 'webhook_operations' };
export const retryWebhookDeliveryInput = strictInput({ delivery_id: z.uuid() });
export const retryWebhookDeliveryOutput = envelopeOf(consoleWebhookDeliverySchema);
