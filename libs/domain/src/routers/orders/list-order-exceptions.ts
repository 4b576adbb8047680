import { listOrderExceptions as list } from '../../orders/order-exceptions';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { listOrderExceptionsInput, listOrderExceptionsMeta, listOrderExceptionsOutput } from './list-order-exceptions.types';

export const listOrderExceptions = partnerProcedure(listOrderExceptionsMeta)
  .input(listOrderExceptionsInput)
  .output(listOrderExceptionsOutput)
  .query(async ({ ctx, input }) => ok(ctx, await list(ctx.db, ctx.caller, input.orderId)));
