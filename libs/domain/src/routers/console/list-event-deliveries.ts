import { listConsoleEventDeliveries } from '../../console/event-deliveries';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { listEventDeliveriesInput, listEventDeliveriesMeta, listEventDeliveriesOutput } from './list-event-deliveries.types';

/** Webhook deliveries of some of the caller's events, with their attempts (sandbox console only). */
export const listEventDeliveries = partnerProcedure(listEventDeliveriesMeta)
  .input(listEventDeliveriesInput)
  .output(listEventDeliveriesOutput)
  .query(async ({ ctx, input }) => ok(ctx, await listConsoleEventDeliveries(ctx.db, ctx.caller, input.event_ids)));
