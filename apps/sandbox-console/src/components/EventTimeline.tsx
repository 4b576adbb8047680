import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import type { StreamEvent } from '../event-stream';
import { useEventStream } from '../event-stream';
import { eventTone, formatClock, formatTime } from '../format';
import { href } from '../routing';
import { isFinal, useTRPC, type Outputs } from '../trpc';
import { CopyButton } from './CopyButton';
import { cancelReason, deliveryStatus, DeliveryStatusBadge, HELD_TEXT } from './WebhookDelivery';
import { Badge, Empty, ErrorNotice } from './states';

type DeliveryView = Outputs['console']['eventDeliveries']['data'];
type Delivery = DeliveryView['deliveries'][number];
type Undelivered = DeliveryView['undelivered'][number];

/** Why an event has no delivery, in a few words (the API says which). */
function undeliveredText(u: Undelivered | undefined): string {
  switch (u?.reason) {
    case 'before_subscription':
      return `no webhook: before your endpoint existed${u.subscribed_since ? ` (registered ${formatClock(u.subscribed_since)})` : ''}`;
    case 'subscription_disabled':
      return 'no webhook: your endpoint was disabled then';
    case 'not_subscribed_then':
      return 'no webhook: this type was added to your endpoint later';
    default:
      return 'no webhook for this type';
  }
}

/** Events seen within this many ms are highlighted as just arrived. */
const FRESH_MS = 6_000;

/**
 * Events newest first. Each row opens to the exact JSON the stream returned, and to the webhook
 * deliveries of that event when the API client has a subscription.
 */
export function EventTimeline({ events, showOrder, emptyText }: { events: StreamEvent[]; showOrder: boolean; emptyText: string }) {
  const newestFirst = [...events].reverse();
  const deliveries = useDeliveries(newestFirst.slice(0, 100).map((e) => e.event_id));
  if (events.length === 0) return <Empty>{emptyText}</Empty>;
  return (
    <>
      <DeliveryBanner query={deliveries} />
      <ol className="timeline" aria-label="Events, newest first">
        {newestFirst.map((event) => (
          <TimelineItem
            key={event.event_id}
            event={event}
            showOrder={showOrder}
            deliveries={deliveries.data?.data.deliveries.filter((d) => d.event_id === event.event_id)}
            undelivered={deliveries.data?.data.undelivered.find((u) => u.event_id === event.event_id)}
            subscriptions={deliveries.data?.data.subscriptions}
          />
        ))}
      </ol>
    </>
  );
}

function useDeliveries(eventIds: string[]) {
  const trpc = useTRPC();
  return useQuery({
    ...trpc.console.eventDeliveries.queryOptions({ event_ids: eventIds }),
    enabled: eventIds.length > 0,
    // Deliveries progress on their own (retries, dead letters): keep them fresh while pending.
    refetchInterval: (query) => {
      if (query.state.error && isFinal(query.state.error)) return false;
      const data = query.state.data?.data;
      if (!data || data.subscriptions.length === 0) return 15_000;
      return data.deliveries.some((d) => d.state === 'pending') ? 2_000 : 10_000;
    },
    placeholderData: (previous) => previous,
  });
}

function DeliveryBanner({ query }: { query: ReturnType<typeof useDeliveries> }) {
  if (query.isError) return <ErrorNotice error={query.error} title="Webhook deliveries could not be read." />;
  const data = query.data?.data;
  if (!data) return null;
  if (data.subscriptions.length === 0) {
    return (
      <p className="note">
        <strong>No webhook endpoint.</strong> This API client has no webhook endpoint in the sandbox, so events are only in the stream.{' '}
        <a href={href.webhooks}>Add an endpoint</a> to receive them as signed deliveries.
      </p>
    );
  }
  return (
    <p className="note">
      Webhooks:{' '}
      {data.subscriptions.map((s, i) => (
        <span key={s.subscription_id}>
          {i > 0 && ', '}
          <a href={href.webhook(s.subscription_id)}>
            <code>{s.url}</code>
          </a>{' '}
          <Badge tone={s.status === 'active' ? 'good' : 'neutral'}>{s.status}</Badge>
        </span>
      ))}
    </p>
  );
}

function TimelineItem({
  event,
  showOrder,
  deliveries,
  undelivered,
  subscriptions,
}: {
  event: StreamEvent;
  showOrder: boolean;
  deliveries: Delivery[] | undefined;
  undelivered: Undelivered | undefined;
  subscriptions: DeliveryView['subscriptions'] | undefined;
}) {
  const [open, setOpen] = useState(false);
  const detailId = useId();
  const { seenAt } = useEventStream();
  const seen = seenAt.get(event.sequence);
  const fresh = seen !== undefined && Date.now() - seen < FRESH_MS;

  return (
    <li className={`timeline-item${fresh ? ' is-fresh' : ''}`} data-sequence={event.sequence} data-type={event.type}>
      <span className={`timeline-dot dot-${eventTone(event.type)}`} aria-hidden="true" />
      <div className="timeline-row">
        <button type="button" className="event-toggle" aria-expanded={open} aria-controls={detailId} onClick={() => setOpen(!open)}>
          <span className="event-seq">#{event.sequence}</span>
          <Badge tone={eventTone(event.type)}>{event.type}</Badge>
          <time dateTime={event.occurred_at} title={formatTime(event.occurred_at)} className="muted">
            {formatClock(event.occurred_at)}
          </time>
          <DeliverySummary deliveries={deliveries} undelivered={undelivered} subscribed={(subscriptions?.length ?? 0) > 0} />
          <span className="event-chevron" aria-hidden="true">
            {open ? '▾' : '▸'}
          </span>
          <span className="visually-hidden">{open ? 'Hide' : 'Show'} the event JSON</span>
        </button>
        {showOrder && (
          <a className="event-order small" href={href.order(event.data.order_id)}>
            {event.data.external_order_id}
          </a>
        )}
      </div>
      {open && (
        <div id={detailId} className="event-detail">
          <pre className="json" tabIndex={0} aria-label={`JSON of event ${event.sequence}`}>
            {JSON.stringify(event, null, 2)}
          </pre>
          <CopyButton text={JSON.stringify(event, null, 2)} label="Copy event JSON" /> <CopyButton text={event.event_id} label="Copy event_id" />
          {(subscriptions?.length ?? 0) > 0 && <DeliveryDetails deliveries={deliveries ?? []} undelivered={undelivered} subscriptions={subscriptions!} />}
        </div>
      )}
    </li>
  );
}

function deadLetterReason(reason: string | null): string {
  if (reason === 'permanent') return 'permanent failure, not retried';
  if (reason === 'exhausted') return 'every attempt failed';
  return reason ?? 'not delivered';
}

function DeliverySummary({ deliveries, undelivered, subscribed }: { deliveries: Delivery[] | undefined; undelivered: Undelivered | undefined; subscribed: boolean }) {
  if (!subscribed || !deliveries) return null;
  if (deliveries.length === 0) return <span className="muted small">{undeliveredText(undelivered)}</span>;
  return (
    <span className="delivery-summary">
      {deliveries.map((d) => (
        <Badge key={d.delivery_id} tone={deliveryStatus(d).tone}>
          webhook {d.state.replace('_', ' ')}
          {d.recovered_at !== null ? ' · recovered' : ''}
          {d.last_status_code !== null ? ` · ${d.last_status_code}` : ''}
          {d.attempts_made > 1 ? ` · ${d.attempts_made} attempts` : ''}
        </Badge>
      ))}
    </span>
  );
}

function DeliveryDetails({ deliveries, undelivered, subscriptions }: { deliveries: Delivery[]; undelivered: Undelivered | undefined; subscriptions: DeliveryView['subscriptions'] }) {
  if (deliveries.length === 0) {
    return <p className="muted small">No delivery: {undeliveredText(undelivered).replace(/^no webhook: /, '')}.</p>;
  }
  return (
    <div className="deliveries">
      <h3 className="h-small">Webhook deliveries</h3>
      {deliveries.map((d) => {
        const subscription = subscriptions.find((s) => s.subscription_id === d.subscription_id);
        return (
          <div key={d.delivery_id} className="delivery">
            <p>
              <DeliveryStatusBadge delivery={d} /> to{' '}
              <a href={href.webhook(d.subscription_id)}>
                <code>{subscription?.url ?? d.subscription_id}</code>
              </a>
              {d.kind === 'replay' && <span className="muted"> (replay)</span>}
              {d.state === 'dead_lettered' && d.recovered_at === null && <strong className="danger"> Dead letter: {deadLetterReason(d.failure_reason)}</strong>}
              {d.state === 'dead_lettered' && d.recovered_at !== null && (
                <span className="muted">
                  {' '}
                  Dead letter ({deadLetterReason(d.failure_reason)}), recovered
                  {d.recovered_by && (
                    <>
                      : replayed as <a href={href.webhookDelivery(d.subscription_id, d.recovered_by)}>delivery {d.recovered_by.slice(0, 8)}</a>
                    </>
                  )}
                </span>
              )}
              {d.state === 'pending' && d.failure_reason === 'no_active_key' && <strong className="warn-text"> Held: {HELD_TEXT}</strong>}
              {d.state === 'cancelled' && <span className="muted"> · cancelled: {cancelReason(d.failure_reason)}</span>}
              {d.state === 'pending' && d.next_attempt_at && <span className="muted"> · next attempt {formatTime(d.next_attempt_at)}</span>}
            </p>
            {d.attempts.length === 0 ? (
              <p className="muted small">No attempt yet.</p>
            ) : (
              <div className="table-wrap" tabIndex={0} role="region" aria-label={`Attempts of the delivery to ${subscription?.url ?? d.subscription_id}`}>
                <table className="compact">
                  <thead>
                    <tr>
                      <th scope="col">Attempt</th>
                      <th scope="col">Started</th>
                      <th scope="col">Status code</th>
                      <th scope="col">Outcome</th>
                      <th scope="col">Duration</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.attempts.map((a) => (
                      <tr key={a.attempt}>
                        <td>{a.attempt}</td>
                        <td className="nowrap">{formatTime(a.started_at)}</td>
                        <td>{a.status_code ?? <span className="muted">{a.error_class ?? 'none'}</span>}</td>
                        <td>{a.outcome.replace('_', ' ')}</td>
                        <td>{a.duration_ms === null ? '—' : `${a.duration_ms} ms`}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </div>
        );
      })}
    </div>
  );
}
