import { EVENT_TYPES } from '@lop/contract';
import { useId, useState } from 'react';
import { EventTimeline } from '../components/EventTimeline';
import { ErrorNotice, Loading } from '../components/states';
import { useEventStream } from '../event-stream';
import { formatClock } from '../format';
import { useLatestCall } from '../inspector/call-log';
import { Inspector } from '../components/Inspector';

const SHOW_STEP = 100;

export function EventsPage() {
  const stream = useEventStream();
  const [type, setType] = useState('');
  const [shown, setShown] = useState(SHOW_STEP);
  const filterId = useId();
  const lastRead = useLatestCall('events.list');
  const matching = type ? stream.events.filter((e) => e.type === type) : stream.events;
  const visible = matching.slice(Math.max(0, matching.length - shown));

  return (
    <section className="stack-lg">
      <header className="page-header">
        <h1>Events</h1>
        <p className="lede">
          Your event stream, read the way a partner should: page by page with <code>next_cursor</code>, then polling from the last cursor. Open an event for its
          JSON and webhook deliveries.
        </p>
      </header>
      <div className="toolbar">
        <div className="field-inline">
          <label htmlFor={filterId}>Type</label>
          <select id={filterId} value={type} onChange={(e) => setType(e.target.value)}>
            <option value="">All types</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <button type="button" className="button secondary" onClick={() => stream.setLive(!stream.live)} aria-pressed={!stream.live}>
          {stream.live ? 'Pause live updates' : 'Resume live updates'}
        </button>
        <span className="muted small" aria-live="polite">
          <span className={`live-dot${stream.reconnecting ? ' is-down' : stream.live ? ' is-live' : ''}`} aria-hidden="true" />
          {stream.reconnecting ? 'Not connected, reconnecting…' : stream.live ? 'Live' : 'Paused'} · {stream.events.length} events
          {stream.lastPolledAt ? ` · last read ${formatClock(new Date(stream.lastPolledAt).toISOString())}` : ''}
        </span>
      </div>
      <Inspector label="Event stream request" call={lastRead} />
      <article className="card" aria-labelledby="event-stream-title">
        <h2 id="event-stream-title" className="visually-hidden">
          Event stream
        </h2>
        {stream.blocked ? (
          <p className="note note-warn reason">{stream.blocked}</p>
        ) : stream.loading ? (
          <Loading label="Reading the event stream…" />
        ) : stream.error && stream.events.length === 0 ? (
          <ErrorNotice error={stream.error} title="The event stream could not be read." />
        ) : (
          <>
            <EventTimeline events={visible} showOrder emptyText={type ? `No ${type} event yet.` : 'No events yet. Create an order and run a scenario: its events appear here as they land.'} />
            {matching.length > visible.length && (
              <div className="row">
                <button type="button" className="button secondary" onClick={() => setShown(shown + SHOW_STEP)}>
                  Show older events ({matching.length - visible.length} more)
                </button>
              </div>
            )}
          </>
        )}
      </article>
    </section>
  );
}
