import { listWebhookDeliveries as listDeliveries } from '../../console/webhooks';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { listWebhookDeliveriesInput, listWebhookDeliveriesMeta, listWebhookDeliveriesOutput } from './list-webhook-deliveries.types';

/** A sandbox endpoint's delivery log, newest first: per attempt the request headers and body, the response status and first 2 KB, duration and next attempt time. (sandbox console only) */
export const listWebhookDeliveries = partnerProcedure(listWebhookDeliveriesMeta)
  .input(listWebhookDeliveriesInput)
  .output(listWebhookDeliveriesOutput)
  .query(async ({ ctx, input }) => ok(ctx, await listDeliveries(ctx.db, ctx.protector, ctx.caller, input)));
