import { queryInteger, strictInput, textSchema } from '../../common-schemas';
import { eventPageSchema } from '../../events/events.schemas';
import { EVENTS_DEFAULT_LIMIT, EVENTS_MAX_LIMIT } from '../../events/stream';
import { envelopeOf } from '../../http/envelope';
import { acceptsPrerendered } from '../../http/prerendered';
import type { PartnerProcedureMeta } from '../../trpc';

export const listEventsMeta: PartnerProcedureMeta = {
  reads: 'replica',
  scope: 'events:read',
  openapi: {
    method: 'GET',
    path: '/v1/events',
    tags: ['Events'],
    summary: 'Read the event stream',
    description:
      'Your ordered event stream (per API client and environment). Start without a cursor, then pass `next_cursor` from each response; `next_cursor` is always present so you can poll from it later. Events carry a dense, increasing `sequence`: after any gap in webhook deliveries, replay from your last cursor and re-read results from the API, which is authoritative. A cursor is bound to its stream (API client and environment; any key of them): another stream\'s cursor is 400 `invalid_request` with `details[].issue` `cursor_of_another_stream`, one past the end `cursor_ahead_of_stream`, an altered one `invalid_cursor`, a `seq:N` cursor from before cursors were bound `cursor_format_retired`, and one whose next events the laboratory has archived with their month `cursor_events_archived` (the error names the oldest sequence kept; docs/events.md).',
  },
};
export const listEventsInput = strictInput({
  cursor: textSchema(64).optional().meta({ description: 'The next_cursor of a previous response; omit to start from the beginning.' }),
  limit: queryInteger({ min: 1, max: EVENTS_MAX_LIMIT, default: EVENTS_DEFAULT_LIMIT }).meta({ description: `Page size, 1 to ${EVENTS_MAX_LIMIT} in plain decimal digits; default ${EVENTS_DEFAULT_LIMIT}.` }),
});
// A page is pre-rendered from the events' stored JSON (events/stream.ts): answered as it is.
export const listEventsOutput = acceptsPrerendered(envelopeOf(eventPageSchema));
