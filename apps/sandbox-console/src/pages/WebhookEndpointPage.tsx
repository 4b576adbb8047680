import { EVENT_TYPES, type EventType } from '@lop/contract';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useState } from 'react';
import { useCapability } from '../capabilities';
import { EndpointHealth } from '../components/EndpointHealth';
import { Inspector } from '../components/Inspector';
import { Badge, Empty, ErrorNotice, Loading } from '../components/states';
import { AttemptDetail, cancelReason, DeliveryStatusBadge, HELD_TEXT, type WebhookDelivery } from '../components/WebhookDelivery';
import { countOf, formatTime, relativeTime } from '../format';
import { useLatestCall } from '../inspector/call-log';
import { href } from '../routing';
import { describeError, isFinal, useTRPC } from '../trpc';
import { EventTypePicker, SecretOnce, takeShownSecret } from './WebhooksPage';

type Filter = 'all' | 'failing' | 'dead_lettered' | 'delivered';
const FILTERS: { id: Filter; label: string }[] = [
  { id: 'all', label: 'All' },
  { id: 'failing', label: 'Failing' },
  { id: 'dead_lettered', label: 'Dead letters' },
  { id: 'delivered', label: 'Delivered' },
];

/** A datetime-local value (the reader's own clock) for `ms`. */
function localInput(ms: number): string {
  const d = new Date(ms);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** One endpoint: its settings, its last 24 hours, and its delivery log (or, with `deliveryId`, one delivery of it). */
export function WebhookEndpointPage({ subscriptionId, deliveryId }: { subscriptionId: string; deliveryId?: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const can = useCapability('console.webhooks.list');
  const endpoints = useQuery({ ...trpc.console.webhooks.list.queryOptions({}), enabled: can.allowed && can.known, refetchInterval: (q) => (q.state.error && isFinal(q.state.error) ? false : 5_000) });
  const [secret, setSecret] = useState(() => takeShownSecret(subscriptionId)?.secret ?? null);
  const [filter, setFilter] = useState<Filter>('all');
  const [editingTypes, setEditingTypes] = useState<EventType[] | null>(null);
  const [since, setSince] = useState(() => localInput(Date.now() - 86_400_000));
  const sinceId = useId();
  const testCall = useLatestCall('console.webhooks.sendTest');
  // The test event's type: an event envelope of it, flagged x-partner-test (docs/webhooks.md).
  const [testType, setTestType] = useState<EventType>('order.created');
  const testTypeId = useId();

  const refresh = () => {
    void queryClient.invalidateQueries(trpc.console.webhooks.pathFilter());
    void queryClient.invalidateQueries(trpc.console.eventDeliveries.pathFilter());
  };
  const id = { subscription_id: subscriptionId };
  const sendTest = useMutation(trpc.console.webhooks.sendTest.mutationOptions({ onSettled: refresh }));
  const rotate = useMutation(trpc.console.webhooks.rotateSecret.mutationOptions({ onSuccess: (r) => setSecret(r.data.secret), onSettled: refresh }));
  const disable = useMutation(trpc.console.webhooks.disable.mutationOptions({ onSettled: refresh }));
  const update = useMutation(trpc.console.webhooks.update.mutationOptions({ onSuccess: () => setEditingTypes(null), onSettled: refresh }));
  const recover = useMutation(trpc.console.webhooks.recover.mutationOptions({ onSettled: refresh }));

  const deliveries = useInfiniteQuery({
    ...trpc.console.webhooks.deliveries.infiniteQueryOptions(
      deliveryId ? { ...id, delivery_id: deliveryId } : { ...id, filter, limit: 25 },
      { getNextPageParam: (last) => last.data.next_cursor ?? undefined },
    ),
    enabled: can.allowed && can.known,
    // Deliveries progress on their own (retries, dead letters): fresh while any is pending.
    refetchInterval: (q) => {
      if (q.state.error && isFinal(q.state.error)) return false;
      return q.state.data?.pages.some((p) => p.data.deliveries.some((d) => d.state === 'pending')) ? 1_500 : 5_000;
    },
    placeholderData: (previous) => previous,
  });

  // The endpoint's counts follow its log: whenever the log changes, they are read again.
  const logUpdatedAt = deliveries.dataUpdatedAt;
  useEffect(() => {
    if (logUpdatedAt) void queryClient.invalidateQueries(trpc.console.webhooks.list.queryFilter());
  }, [logUpdatedAt, queryClient, trpc]);

  if (!can.allowed) return <p className="note note-warn reason">{can.reason}</p>;
  if (endpoints.isPending) return <Loading label="Reading the endpoint…" />;
  if (endpoints.isError) return <ErrorNotice error={endpoints.error} onRetry={() => endpoints.refetch()} />;
  const endpoint = endpoints.data.data.find((e) => e.subscription_id === subscriptionId);
  if (!endpoint) {
    return (
      <section className="stack">
        <p>
          <a href={href.webhooks}>← Webhooks</a>
        </p>
        <h1>Webhook endpoint</h1>
        <Empty>This key has no webhook endpoint with id {subscriptionId}.</Empty>
      </section>
    );
  }
  const active = endpoint.status === 'active';
  const rows = deliveries.data?.pages.flatMap((p) => p.data.deliveries) ?? [];

  return (
    <section className="stack-lg">
      <p className="breadcrumb">
        <a href={href.webhooks}>← Webhooks</a>
      </p>
      <header className="page-header">
        <p className="eyebrow">Webhook endpoint</p>
        <h1 className="endpoint-url">{endpoint.url}</h1>
        <p className="order-summary">
          <Badge tone={active ? 'good' : 'neutral'}>{endpoint.status}</Badge>
          <span className="muted">
            registered {formatTime(endpoint.created_at)}
            {endpoint.secret_rotated_at && ` · secret rotated ${formatTime(endpoint.secret_rotated_at)}`}
            {endpoint.disabled_at && ` · disabled ${formatTime(endpoint.disabled_at)}`}
          </span>
        </p>
      </header>
      {secret && <SecretOnce secret={secret} onDone={() => setSecret(null)} />}

      <article className="card" aria-labelledby="health-title">
        <h2 id="health-title">Last 24 hours</h2>
        <EndpointHealth subscriptionId={subscriptionId} />
      </article>

      <article className="card" aria-labelledby="endpoint-actions-title">
        <h2 id="endpoint-actions-title">Endpoint</h2>
        <div className="row">
          <label htmlFor={testTypeId} className="muted">
            Test event type
          </label>
          <select id={testTypeId} value={testType} onChange={(e) => setTestType(e.target.value as EventType)} disabled={!active}>
            {EVENT_TYPES.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
          <button type="button" className="button" onClick={() => sendTest.mutate({ ...id, event_type: testType })} disabled={!active || sendTest.isPending}>
            {sendTest.isPending ? 'Sending…' : 'Send test event'}
          </button>
          <button
            type="button"
            className="button secondary"
            disabled={!active || rotate.isPending}
            onClick={() => window.confirm('Rotate the signing secret? The current one stops working at once, for retries of earlier events too.') && rotate.mutate(id)}
          >
            Rotate secret
          </button>
          <button
            type="button"
            className="button secondary danger-button"
            disabled={!active || disable.isPending}
            onClick={() => window.confirm('Disable this endpoint? Pending deliveries are cancelled and no new event is delivered to it.') && disable.mutate(id)}
          >
            Disable
          </button>
        </div>
        {sendTest.isSuccess && (
          <p className={`note ${sendTest.data.data.state === 'delivered' ? 'note-good' : 'note-bad'}`} role="status">
            Test event {sendTest.data.data.state === 'delivered' ? 'delivered' : 'failed'}
            {sendTest.data.data.attempts[0]?.response ? `: your endpoint answered ${sendTest.data.data.attempts[0].response.status}` : `: ${sendTest.data.data.attempts[0]?.error_class ?? 'no answer'}`}
            {' '}in {sendTest.data.data.attempts[0]?.duration_ms ?? '?'} ms. It is the first row of the log below.
          </p>
        )}
        {[sendTest, rotate, disable, update].map((m, i) => m.isError && <ErrorNotice key={i} error={m.error} title="That did not work." />)}
        {testCall && <Inspector label="Send test event request" call={testCall} />}

        <h3 className="h-small">Event types</h3>
        {editingTypes ? (
          <div className="stack">
            <EventTypePicker value={editingTypes} onChange={setEditingTypes} legend="Event types to receive from now on" />
            <div className="row">
              <button type="button" className="button small" disabled={editingTypes.length === 0 || update.isPending} onClick={() => update.mutate({ ...id, event_types: editingTypes })}>
                Save event types
              </button>
              <button type="button" className="button ghost small" onClick={() => setEditingTypes(null)}>
                Cancel
              </button>
            </div>
          </div>
        ) : (
          <p>
            {endpoint.event_types.length === EVENT_TYPES.length ? 'All event types' : endpoint.event_types.map((t) => <code key={t}>{t} </code>)}{' '}
            {active && (
              <button type="button" className="button ghost small" onClick={() => setEditingTypes(endpoint.event_types as EventType[])}>
                Change
              </button>
            )}
          </p>
        )}

        <h3 className="h-small">Recover</h3>
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            recover.mutate({ ...id, since: new Date(since).toISOString() });
          }}
        >
          <label htmlFor={sinceId}>Replay every dead-lettered event since</label>
          <input id={sinceId} type="datetime-local" className="since" value={since} onChange={(e) => setSince(e.target.value)} required />
          <button type="submit" className="button secondary" disabled={!active || recover.isPending}>
            {recover.isPending ? 'Replaying…' : 'Recover'}
          </button>
        </form>
        {recover.isSuccess && (
          <p className="note" role="status">
            {recover.data.data.replayed === 0 ? 'No dead letter to replay since then: each is recovered already, or a delivery of its event is still on its way.' : `Replaying ${recover.data.data.replayed} event${recover.data.data.replayed === 1 ? '' : 's'} as new deliveries.`}
            {recover.data.data.remaining > 0 && ` ${recover.data.data.remaining} more remain: recover again once these are done.`}
            {recover.data.data.recently_recovered > 0 &&
              ` ${recover.data.data.recently_recovered} event${recover.data.data.recently_recovered === 1 ? ' was' : 's were'} replayed by a recover moments ago and left alone: recover again shortly to retry ${recover.data.data.recently_recovered === 1 ? 'it' : 'them'}.`}
          </p>
        )}
        {recover.isError && <ErrorNotice error={recover.error} title="Nothing was replayed." />}
      </article>

      <article className="card" aria-labelledby="deliveries-title">
        <h2 id="deliveries-title">Deliveries</h2>
        {deliveryId ? (
          <p className="row">
            <span>One delivery of this endpoint.</span> <a href={href.webhook(subscriptionId)}>All deliveries</a>
          </p>
        ) : (
          <div className="row" role="group" aria-label="Show deliveries">
            {FILTERS.map((f) => (
              <button key={f.id} type="button" className={`button small ${filter === f.id ? '' : 'ghost'}`} aria-pressed={filter === f.id} onClick={() => setFilter(f.id)}>
                {f.label}
              </button>
            ))}
            <span className="muted small delivery-totals">
              {endpoint.deliveries.delivered} delivered · {endpoint.deliveries.retrying} retrying · {countOf(endpoint.deliveries.dead_lettered, 'dead letter')}
              {endpoint.deliveries.recovered > 0 && `, ${endpoint.deliveries.recovered} recovered`}
            </span>
          </div>
        )}
        {deliveries.isPending ? (
          <Loading label="Reading deliveries…" />
        ) : deliveries.isError ? (
          <ErrorNotice error={deliveries.error} onRetry={() => deliveries.refetch()} />
        ) : rows.length === 0 ? (
          <Empty>
            {deliveryId ? `This endpoint has no delivery ${deliveryId}.` : filter === 'all' ? 'No delivery yet. Send a test event, or create an order and run a scenario.' : 'No delivery matches this filter.'}
          </Empty>
        ) : (
          <ol className="delivery-log" aria-label="Deliveries, newest first">
            {rows.map((d) => (
              <DeliveryRow key={d.delivery_id} delivery={d} onChanged={refresh} initiallyOpen={d.delivery_id === deliveryId} />
            ))}
          </ol>
        )}
        {deliveries.hasNextPage && (
          <div className="row">
            <button type="button" className="button secondary" onClick={() => deliveries.fetchNextPage()} disabled={deliveries.isFetchingNextPage}>
              Older deliveries
            </button>
          </div>
        )}
      </article>
    </section>
  );
}

function DeliveryRow({ delivery: d, onChanged, initiallyOpen }: { delivery: WebhookDelivery; onChanged: () => void; initiallyOpen: boolean }) {
  const trpc = useTRPC();
  const [open, setOpen] = useState(initiallyOpen);
  const detailId = useId();
  const resend = useMutation(trpc.console.webhooks.resend.mutationOptions({ onSettled: onChanged }));
  const retry = useMutation(trpc.console.webhooks.retryNow.mutationOptions({ onSettled: onChanged }));
  const canResend = d.kind !== 'test' && (d.state === 'delivered' || d.state === 'dead_lettered' || d.state === 'cancelled');
  const canRetry = d.state === 'pending' && d.attempts_made > 0;
  const recovered = d.state === 'dead_lettered' && d.recovered_at !== null;
  const failed = (d.state === 'dead_lettered' && !recovered) || d.state === 'failed';
  return (
    <li
      className={`delivery-entry${failed ? ' is-failed' : recovered ? ' is-recovered' : d.state === 'pending' && d.attempts_made > 0 ? ' is-retrying' : ''}`}
      data-state={d.state}
      data-delivery-id={d.delivery_id}
      data-recovered={recovered || undefined}
    >
      <div className="delivery-line">
        <button type="button" className="event-toggle" aria-expanded={open} aria-controls={detailId} onClick={() => setOpen(!open)}>
          <span className="event-chevron" aria-hidden="true">
            {open ? '▾' : '▸'}
          </span>
          <DeliveryStatusBadge delivery={d} />
          {recovered && <Badge tone="neutral">recovered</Badge>}
          <code>{d.kind === 'test' ? 'test event' : d.event_type}</code>
          {d.kind === 'replay' && <span className="muted small">replay</span>}
          <span className="muted small">
            {d.attempts_made} attempt{d.attempts_made === 1 ? '' : 's'}
            {d.last_status_code !== null ? ` · last ${d.last_status_code}` : ''}
          </span>
          <time className="muted small" dateTime={d.created_at}>
            {formatTime(d.created_at)}
          </time>
          <span className="visually-hidden">{open ? 'Hide' : 'Show'} the attempts</span>
        </button>
        {d.state === 'pending' && d.next_attempt_at && d.attempts_made > 0 && (
          <span className="small warn-text">next attempt {relativeTime(d.next_attempt_at)}</span>
        )}
        {canRetry && (
          <button type="button" className="button small" onClick={() => retry.mutate({ delivery_id: d.delivery_id })} disabled={retry.isPending}>
            Retry now
          </button>
        )}
        {canResend && (
          <button type="button" className="button secondary small" onClick={() => resend.mutate({ delivery_id: d.delivery_id })} disabled={resend.isPending}>
            Resend
          </button>
        )}
      </div>
      {d.failure_reason && (failed || recovered) && (
        <p className={`small ${recovered ? 'muted' : 'danger'}`}>
          Dead letter: {d.failure_reason === 'exhausted' ? 'every attempt failed' : d.failure_reason === 'permanent' ? 'a permanent failure, not retried' : d.failure_reason}
        </p>
      )}
      {recovered && (
        <p className="small recovered-note">
          Recovered {relativeTime(d.recovered_at!)}
          {d.recovered_by ? (
            <>
              : replayed as <a href={href.webhookDelivery(d.subscription_id, d.recovered_by)}>delivery {d.recovered_by.slice(0, 8)}</a>
            </>
          ) : (
            ''
          )}
          .
        </p>
      )}
      {d.state === 'pending' && d.failure_reason === 'no_active_key' && <p className="small warn-text">Held: {HELD_TEXT}.</p>}
      {d.state === 'cancelled' && <p className="small muted">Not sent: {cancelReason(d.failure_reason)}.</p>}
      {resend.isSuccess && <p className="small note-inline">Resent as a new delivery (at the top of the log).</p>}
      {[resend, retry].map((m, i) => m.isError && <p key={i} className="form-error small">{describeError(m.error).message}</p>)}
      {open && (
        <div id={detailId} className="delivery-detail">
          {d.attempts.length === 0 ? (
            <p className="muted small">No attempt yet.</p>
          ) : (
            <ol className="attempts" aria-label="Attempts, first first">
              {d.attempts.map((a, i) => (
                <AttemptDetail
                  key={a.attempt_id}
                  attempt={a}
                  // The delivery decides: only its latest attempt, only while it waits for a retry.
                  nextAttemptAt={d.state === 'pending' && i === d.attempts.length - 1 && a.outcome !== 'sending' ? d.next_attempt_at : null}
                />
              ))}
            </ol>
          )}
          <p className="muted small">
            delivery_id <code>{d.delivery_id}</code>
            {d.event_id && (
              <>
                {' '}
                · event_id <code>{d.event_id}</code>
              </>
            )}
            {d.replay_of && (
              <>
                {' '}
                · replay of <a href={href.webhookDelivery(d.subscription_id, d.replay_of)}>{d.replay_of}</a>
              </>
            )}
          </p>
        </div>
      )}
    </li>
  );
}
