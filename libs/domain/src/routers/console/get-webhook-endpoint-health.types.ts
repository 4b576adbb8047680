import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { consoleWebhookHealthSchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const getWebhookEndpointHealthMeta: PartnerProcedureMeta = { scope: 'events:read' };
export const getWebhookEndpointHealthInput = strictInput({ subscription_id: z.uuid() });
export const getWebhookEndpointHealthOutput = envelopeOf(consoleWebhookHealthSchema);
