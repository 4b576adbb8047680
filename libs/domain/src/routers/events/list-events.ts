import { readEvents } from '../../events/stream';
import { ok } from '../../http/envelope';
import { scopedProcedure } from '../../trpc';
import { listEventsInput, listEventsMeta, listEventsOutput } from './list-events.types';

export const listEvents = scopedProcedure('events:read')
  .meta(listEventsMeta)
  .input(listEventsInput)
  .output(listEventsOutput)
  .query(async ({ ctx, input }) => {
    const page = await readEvents(ctx.db, ctx.protector, ctx.caller, input.cursor, input.limit);
    return ok(ctx, page, page.next_cursor);
  });
