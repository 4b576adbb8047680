import { queryInteger, strictInput } from '../../common-schemas';
import { eventPageInput, eventPageSchema } from '../../events/events.schemas';
import { EVENTS_MAX_WAIT_SECONDS } from '../../events/wait';
import { envelopeOf } from '../../http/envelope';
import { acceptsPrerendered } from '../../http/prerendered';
import type { PartnerProcedureMeta } from '../../trpc';

export const listEventsMeta: PartnerProcedureMeta = {
  reads: 'replica',
  scope: 'events:read',
  // A waiting read over its caps (events/wait.ts).
  errors: ['rate_limited'],
  openapi: {
    method: 'GET',
    path: '/v1/events',
    tags: ['Events'],
    summary: 'Read the event stream',
    description:
      'Your ordered event stream (per API client and environment). Start without a cursor, then pass `next_cursor` from each response; `next_cursor` is always present so you can poll from it later. Events carry a dense, increasing `sequence`: after any gap in webhook deliveries, replay from your last cursor and re-read results from the API, which is authoritative. A cursor is bound to its stream (API client and environment; any key of them): another stream\'s cursor is 400 `invalid_request` with `details[].issue` `cursor_of_another_stream`, one past the end `cursor_ahead_of_stream`, an altered one `invalid_cursor`, a `seq:N` cursor from before cursors were bound `cursor_format_retired`, and one whose next events the laboratory has archived with their month `cursor_events_archived` (the error names the oldest sequence kept; docs/events.md).\n\n' +
      `**Waiting for the next event** (instead of webhooks): with \`wait=N\` (seconds, at most ${EVENTS_MAX_WAIT_SECONDS}) a read whose page would be empty is held until an event past the cursor commits, then answered at once with it, or answered empty (with \`next_cursor\`) after N seconds. A page with events, and any error, is answered at once. Set your HTTP client's timeout above the wait (e.g. ${EVENTS_MAX_WAIT_SECONDS + 10} s). Held reads are capped per API client and environment, and per server: past a cap a read that would wait is answered 429 \`rate_limited\` with \`details[0].issue\` \`too_many_waiting_reads\` and \`Retry-After\` (docs/events.md § Waiting for the next event).`,
  },
};
export const listEventsInput = strictInput({
  ...eventPageInput,
  wait: queryInteger({ min: 0, max: EVENTS_MAX_WAIT_SECONDS, default: 0 }).meta({
    description: `Seconds to wait for the next event when the page after the cursor is empty, 0 to ${EVENTS_MAX_WAIT_SECONDS} in plain decimal digits; default 0 (answer at once).`,
  }),
});
// A page is pre-rendered from the events' stored JSON (events/stream.ts): answered as it is.
export const listEventsOutput = acceptsPrerendered(envelopeOf(eventPageSchema));
