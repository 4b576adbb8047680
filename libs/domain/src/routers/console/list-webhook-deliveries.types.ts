import { z } from 'zod';
import { oneLineCharacters, queryInteger, strictInput } from '../../common-schemas';
import { consoleWebhookDeliveryPageSchema } from '../../console/console.schemas';
import { DELIVERY_PAGE_DEFAULT, DELIVERY_PAGE_MAX } from '../../console/webhooks';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const listWebhookDeliveriesMeta: PartnerProcedureMeta = { scope: 'events:read' };
export const listWebhookDeliveriesInput = strictInput({ subscription_id: z.uuid(), filter: z.enum(['all', 'failing', 'dead_lettered', 'delivered']).default('all'), cursor: z.string().max(80).check(oneLineCharacters).optional(), limit: queryInteger({ min: 1, max: DELIVERY_PAGE_MAX, default: DELIVERY_PAGE_DEFAULT }), direction: z.enum(['forward']).optional(), delivery_id: z.uuid().optional().meta({ description: 'Only this delivery of the endpoint (a link to it); cursor and limit do not apply.' }) });
export const listWebhookDeliveriesOutput = envelopeOf(consoleWebhookDeliveryPageSchema);
