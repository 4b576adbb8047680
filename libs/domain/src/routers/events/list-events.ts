import { streamScope } from '../../events/stream';
import { readEventsWaiting } from '../../events/wait';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { listEventsInput, listEventsMeta, listEventsOutput } from './list-events.types';

export const listEvents = partnerProcedure(listEventsMeta)
  .input(listEventsInput)
  .output(listEventsOutput)
  .query(async ({ ctx, input }) => {
    const page = await readEventsWaiting({
      db: ctx.db,
      primary: ctx.primary ?? ctx.db,
      protector: ctx.protector,
      scope: streamScope(ctx.caller),
      cursor: input.cursor,
      limit: input.limit,
      waitSeconds: input.wait,
      waiters: ctx.eventWaiters,
      clientGone: ctx.clientGone,
    });
    return ok(ctx, page, page.next_cursor);
  });
