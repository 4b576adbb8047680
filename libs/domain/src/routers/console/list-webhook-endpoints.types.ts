import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { consoleWebhookEndpointSchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
// Webhooks deliver events: the same scope as reading the event stream.
export const listWebhookEndpointsMeta: PartnerProcedureMeta = { scope: 'events:read' };
export const listWebhookEndpointsInput = strictInput({});
export const listWebhookEndpointsOutput = envelopeOf(z.array(consoleWebhookEndpointSchema));
