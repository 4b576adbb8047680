import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { consoleWebhookEndpointWithSecretSchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const rotateWebhookSecretMeta: PartnerProcedureMeta = { scope: 'events:read' };
export const rotateWebhookSecretInput = strictInput({ subscription_id: z.uuid() });
export const rotateWebhookSecretOutput = envelopeOf(consoleWebhookEndpointWithSecretSchema);
