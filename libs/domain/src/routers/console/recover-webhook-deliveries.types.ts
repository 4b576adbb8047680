import { z } from 'zod';
import { strictInput, timestampSchema } from '../../common-schemas';
import { consoleWebhookRecoverySchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const recoverWebhookDeliveriesMeta: PartnerProcedureMeta = { scope: 'events:read', rateBudget: 'webhook_operations' };
export const recoverWebhookDeliveriesInput = strictInput({ subscription_id: z.uuid(), since: timestampSchema });
export const recoverWebhookDeliveriesOutput = envelopeOf(consoleWebhookRecoverySchema);
