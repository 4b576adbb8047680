import { eventTypeSchema } from '@lop/contract';
import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { consoleWebhookEndpointSchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

const eventTypesInput = z.array(eventTypeSchema).min(1).max(20);
// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const updateWebhookEndpointMeta: PartnerProcedureMeta = { scope: 'events:read' };
export const updateWebhookEndpointInput = strictInput({ subscription_id: z.uuid(), event_types: eventTypesInput });
export const updateWebhookEndpointOutput = envelopeOf(consoleWebhookEndpointSchema);
