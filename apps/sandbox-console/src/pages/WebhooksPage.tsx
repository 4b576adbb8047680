import { EVENT_TYPES, type EventType } from '@lop/contract';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { useCapability } from '../capabilities';
import { CopyButton } from '../components/CopyButton';
import { Badge, Empty, ErrorNotice, Loading } from '../components/states';
import { countOf, formatTime } from '../format';
import { href, navigate } from '../routing';
import { isFinal, useTRPC, type Outputs } from '../trpc';

type EndpointWithSecret = Outputs['console']['webhooks']['create']['data'];

/** The secret of the endpoint created or rotated last in this tab: shown once, then gone. */
let shownOnce: EndpointWithSecret | null = null;
export function takeShownSecret(subscriptionId: string): EndpointWithSecret | null {
  if (shownOnce?.subscription_id !== subscriptionId) return null;
  const taken = shownOnce;
  shownOnce = null;
  return taken;
}

/** The signing secret, with the one chance to copy it. */
export function SecretOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <section className="secret-once note note-warn" aria-label="Signing secret">
      <p>
        <strong>Signing secret: copy it now.</strong> It is stored only encrypted and cannot be shown again; verify every delivery’s <code>x-partner-signature</code> with
        it, using the whole string (<code>whsec_</code> included, not base64-decoded) as the HMAC key. The{' '}
        <a href="/docs/guides/webhooks#verification-samples-tested">webhooks guide</a> has tested samples in TypeScript and Python; the <a href="/docs">API reference</a>{' '}
        documents each delivery.
      </p>
      <p>
        <code className="secret">{secret}</code> <CopyButton text={secret} label="Copy secret" />
      </p>
      <button type="button" className="button secondary small" onClick={onDone}>
        I have stored it
      </button>
    </section>
  );
}

export function EventTypePicker({ value, onChange, legend }: { value: EventType[]; onChange: (next: EventType[]) => void; legend: string }) {
  const all = value.length === EVENT_TYPES.length;
  return (
    <fieldset className="event-types">
      <legend>{legend}</legend>
      <label className="checkbox">
        <input type="checkbox" checked={all} onChange={() => onChange(all ? [] : [...EVENT_TYPES])} /> all event types
      </label>
      <div className="event-type-grid">
        {EVENT_TYPES.map((t) => (
          <label key={t} className="checkbox">
            <input type="checkbox" checked={value.includes(t)} onChange={(e) => onChange(e.target.checked ? EVENT_TYPES.filter((x) => x === t || value.includes(x)) : value.filter((x) => x !== t))} />{' '}
            <code>{t}</code>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

export function WebhooksPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const can = useCapability('console.webhooks.list');
  const endpoints = useQuery({
    ...trpc.console.webhooks.list.queryOptions({}),
    enabled: can.allowed && can.known,
    refetchInterval: (q) => (q.state.error && isFinal(q.state.error) ? false : 5_000),
  });
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState<EventType[]>([...EVENT_TYPES]);
  const urlId = useId();
  const hintId = useId();
  const create = useMutation(
    trpc.console.webhooks.create.mutationOptions({
      onSuccess: (created) => {
        shownOnce = created.data;
        void queryClient.invalidateQueries(trpc.console.webhooks.list.queryFilter());
        void queryClient.invalidateQueries(trpc.console.eventDeliveries.pathFilter());
        navigate(href.webhook(created.data.subscription_id));
      },
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (types.length === 0 || create.isPending) return;
    create.mutate({ url: url.trim(), event_types: types });
  };

  return (
    <section className="stack-lg">
      <header className="page-header">
        <h1>Webhooks</h1>
        <p className="lede">
          Your sandbox endpoints: register one, choose its event types, send a test event, and read every delivery with its request and your endpoint’s answer.
          Production endpoints are registered by the laboratory’s administrators.
        </p>
      </header>
      {!can.allowed ? (
        <p className="note note-warn reason">{can.reason}</p>
      ) : (
        <>
          <article className="card" aria-labelledby="add-endpoint-title">
            <h2 id="add-endpoint-title">Add an endpoint</h2>
            <form className="stack" onSubmit={submit}>
              <label htmlFor={urlId}>Endpoint URL</label>
              <input id={urlId} type="url" required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://hooks.example.com/lab" aria-describedby={hintId} />
              <p id={hintId} className="muted small">
                A public <code>https://</code> URL. Private, link-local and loopback addresses are refused. For a handler on your own machine, run{' '}
                <code>lop listen --forward-to http://localhost:&lt;port&gt;/hooks</code> instead: it forwards your event stream as signed deliveries, nothing to register here.
                (A service started with <code>PARTNER_WEBHOOKS_ALLOW_LOOPBACK=true</code> also accepts <code>http://127.0.0.1:&lt;port&gt;</code> and <code>localhost:&lt;port&gt;</code>, never its own ports.)
              </p>
              <EventTypePicker value={types} onChange={setTypes} legend="Event types to receive" />
              {types.length === 0 && <p className="form-error">Choose at least one event type.</p>}
              <div>
                <button type="submit" className="button" disabled={create.isPending || types.length === 0}>
                  {create.isPending ? 'Registering…' : 'Register endpoint'}
                </button>
              </div>
              {create.isError && <ErrorNotice error={create.error} title="The endpoint was not registered." />}
            </form>
          </article>

          <article className="card" aria-labelledby="endpoints-title">
            <h2 id="endpoints-title">Endpoints</h2>
            {endpoints.isPending ? (
              <Loading label="Reading your endpoints…" />
            ) : endpoints.isError ? (
              <ErrorNotice error={endpoints.error} onRetry={() => endpoints.refetch()} />
            ) : endpoints.data.data.length === 0 ? (
              <Empty>No endpoint yet: events are only in the stream. Register one above to receive them as signed deliveries.</Empty>
            ) : (
              <div className="table-wrap" tabIndex={0} role="region" aria-label="Endpoints">
                <table>
                  <caption className="visually-hidden">Sandbox webhook endpoints</caption>
                  <thead>
                    <tr>
                      <th scope="col">URL</th>
                      <th scope="col">Status</th>
                      <th scope="col">Event types</th>
                      <th scope="col">Deliveries</th>
                      <th scope="col">Registered</th>
                    </tr>
                  </thead>
                  <tbody>
                    {endpoints.data.data.map((e) => (
                      <tr key={e.subscription_id}>
                        <td>
                          <a href={href.webhook(e.subscription_id)}>{e.url}</a>
                        </td>
                        <td>
                          <Badge tone={e.status === 'active' ? 'good' : 'neutral'}>{e.status}</Badge>
                        </td>
                        <td>{e.event_types.length === EVENT_TYPES.length ? 'all' : e.event_types.join(', ')}</td>
                        <td className="delivery-counts">
                          <span>{e.deliveries.delivered} delivered</span>
                          {e.deliveries.retrying > 0 && <Badge tone="warn">⟳ {e.deliveries.retrying} retrying</Badge>}
                          {e.deliveries.dead_lettered > 0 && <Badge tone="bad">✗ {countOf(e.deliveries.dead_lettered, 'dead letter')}</Badge>}
                          {e.deliveries.recovered > 0 && <span className="muted small">{e.deliveries.recovered} recovered</span>}
                        </td>
                        <td className="nowrap">{formatTime(e.created_at)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </article>
        </>
      )}
    </section>
  );
}
