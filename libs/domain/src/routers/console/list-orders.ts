import { listConsoleOrders } from '../../console/order-list';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { listConsoleOrdersInput, listConsoleOrdersMeta, listConsoleOrdersOutput } from './list-orders.types';

/** The caller's orders, newest first (sandbox console only). */
export const listOrders = partnerProcedure(listConsoleOrdersMeta)
  .input(listConsoleOrdersInput)
  .output(listConsoleOrdersOutput)
  .query(async ({ ctx, input }) => {
    const page = await listConsoleOrders(ctx.db, ctx.protector, ctx.caller, input);
    return ok(ctx, page, page.next_cursor);
  });
