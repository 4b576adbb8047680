import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { consoleEventDeliveriesSchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
export const listEventDeliveriesMeta: PartnerProcedureMeta = { scope: 'events:read' };
export const listEventDeliveriesInput = strictInput({
  event_ids: z.array(z.uuid()).max(100),
});
export const listEventDeliveriesOutput = envelopeOf(consoleEventDeliveriesSchema);
