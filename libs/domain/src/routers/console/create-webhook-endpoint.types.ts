import { eventTypeSchema } from '@lop/contract';
import { z } from 'zod';
import { oneLineCharacters, strictInput } from '../../common-schemas';
import { consoleWebhookEndpointWithSecretSchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

const eventTypesInput = z.array(eventTypeSchema).min(1).max(20);
// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const createWebhookEndpointMeta: PartnerProcedureMeta = { scope: 'events:read', rateBudget: 'webhook_operations' };
export const createWebhookEndpointInput = strictInput({ url: z.string().trim().min(1).max(2048).check(oneLineCharacters), event_types: eventTypesInput });
export const createWebhookEndpointOutput = envelopeOf(consoleWebhookEndpointWithSecretSchema);
