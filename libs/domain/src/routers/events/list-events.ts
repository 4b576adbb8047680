import { readEvents } from '../../events/stream';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { listEventsInput, listEventsMeta, listEventsOutput } from './list-events.types';

export const listEvents = partnerProcedure(listEventsMeta)
  .input(listEventsInput)
  .output(listEventsOutput)
  .query(async ({ ctx, input }) => {
    const page = await readEvents(ctx.db, ctx.protector, ctx.caller, input.cursor, input.limit);
    return ok(ctx, page, page.next_cursor);
  });
