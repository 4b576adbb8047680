import { useQuery } from '@tanstack/react-query';
import { useState, type RefCallback } from 'react';
import { EventTimeline } from '../components/EventTimeline';
import { ExceptionsPanel } from '../components/ExceptionsPanel';
import { NextAction, OrderState } from '../components/OrderState';
import { criticalObservations, observationLine, ResultsPanel } from '../components/ResultsPanel';
import { ScenarioPanel, useScenarioOffered } from '../components/ScenarioPanel';
import { Badge, Empty, ErrorNotice, Loading } from '../components/states';
import { useEventStream } from '../event-stream';
import { takeFlash } from '../flash';
import { formatTime, humanize } from '../format';
import { href } from '../routing';
import { inputIs, useLatestCall } from '../inspector/call-log';
import { Inspector } from '../components/Inspector';
import { CopyButton } from '../components/CopyButton';
import { CancelOrder } from '../components/CancelOrder';
import { useCapability } from '../capabilities';
import { describeError, useTRPC } from '../trpc';

export function OrderPage({ orderId }: { orderId: string }) {
  const trpc = useTRPC();
  const order = useQuery(trpc.orders.get.queryOptions({ orderId }));
  const [flash] = useState(() => takeFlash(orderId));
  const stream = useEventStream();
  const orderEvents = stream.events.filter((e) => e.data.order_id === orderId);
  const readCall = useLatestCall('orders.get', inputIs({ orderId }));
  const names = useOrderNames(order.data?.data.program_id, order.data?.data.item_id);
  const canResults = useCapability('results.list');
  // The same query (and cache entry) as the results panel: the banner costs no extra request.
  const results = useQuery({ ...trpc.results.list.queryOptions({ orderId }), enabled: canResults.allowed && canResults.known });
  const critical = criticalObservations(results.data?.data);
  // Only an order a scenario can still move is invited to run one (a cancelled order is final).
  const scenarioOffered = useScenarioOffered(orderId);
  const createCall = useLatestCall('orders.create', (call) => (call.response as { data?: { order_id?: string } } | undefined)?.data?.order_id === orderId);

  if (order.isPending) return <Loading label="Reading the order…" />;
  if (order.isError) {
    const notFound = describeError(order.error).code === 'not_found';
    return (
      <section className="stack">
        <p>
          <a href={href.orders}>← Orders</a>
        </p>
        <h1>Order</h1>
        {notFound ? (
          <Empty>This key has no order with id <code>{orderId}</code>: it may belong to another client or environment.</Empty>
        ) : (
          <ErrorNotice error={order.error} onRetry={() => order.refetch()} />
        )}
      </section>
    );
  }
  const o = order.data.data;

  return (
    <section className="stack-lg">
      <p className="breadcrumb">
        <a href={href.orders}>← Orders</a>
      </p>
      <header className="page-header order-header">
        <div>
          <p className="eyebrow">Order</p>
          <h1>{o.external_order_id}</h1>
          <p className="order-summary">
            <OrderState lifecycle={o.lifecycle} detail={o.lifecycle_detail} />
            <span className="muted">Next action:</span> <NextAction action={o.next_action} />
          </p>
        </div>
      </header>
      {critical.length > 0 && (
        <section className="critical-banner" aria-label="Critical result">
          <strong>⚠ Critical result.</strong> The current released version is flagged critical:{' '}
          {critical.map((o, i) => (
            <span key={i} className="critical-value">
              {observationLine(o)}
            </span>
          ))}
          . <span className="small">Act on it as your clinical escalation procedure says; the laboratory has also emitted result.critical.</span>
        </section>
      )}
      {flash && (
        <p className="note note-good focus-target" role="status" tabIndex={-1} ref={reveal}>
          {flash}
          {scenarioOffered && ' Run a scenario to move it along.'}
        </p>
      )}
      {createCall && <Inspector label="The request that created this order" call={createCall} />}
      <JumpNav
        sections={[
          ['scenario-title', 'Scenario'],
          ['order-events-title', 'Events'],
          ['results-title', 'Results'],
          ['exceptions-title', 'Exceptions'],
          ['cancel-title', 'Cancel'],
          ['details-title', 'Details'],
        ]}
      />

      <div className="order-layout">
        <article className="card" aria-labelledby="scenario-title">
          <h2 id="scenario-title">{scenarioOffered === false ? 'Scenarios' : 'Run a scenario'}</h2>
          <ScenarioPanel orderId={orderId} />
        </article>
        <aside className="card order-events" aria-labelledby="order-events-title">
          <h2 id="order-events-title">Events of this order</h2>
          <p className="muted small">
            <span className={`live-dot${stream.reconnecting ? ' is-down' : stream.live ? ' is-live' : ''}`} aria-hidden="true" />
            <span role="status">
              {stream.reconnecting ? 'Not connected: the API cannot be reached. Reconnecting…' : stream.live ? 'Live from the event stream' : 'Live updates paused'}
            </span>{' '}
            · {orderEvents.length} events
          </p>
          {stream.blocked ? (
            <p className="note note-warn small reason">{stream.blocked}</p>
          ) : stream.loading ? (
            <Loading label="Reading the event stream…" />
          ) : stream.error && orderEvents.length === 0 ? (
            <ErrorNotice error={stream.error} title="The event stream could not be read." />
          ) : (
            <EventTimeline events={orderEvents} showOrder={false} emptyText="No events for this order yet." />
          )}
        </aside>
      </div>

      <article className="card" aria-labelledby="results-title">
        <h2 id="results-title">Results</h2>
        <ResultsPanel orderId={orderId} />
      </article>

      <article className="card" aria-labelledby="exceptions-title">
        <h2 id="exceptions-title">Exceptions</h2>
        <ExceptionsPanel orderId={orderId} />
      </article>

      <article className="card" aria-labelledby="cancel-title">
        <h2 id="cancel-title">Cancel the order</h2>
        <CancelOrder orderId={orderId} lifecycle={o.lifecycle} />
      </article>
      <article className="card" aria-labelledby="details-title">
        <h2 id="details-title">Order details</h2>
        <Inspector label="Order request" call={readCall} />
        <dl className="facts">
          <dt>Order id</dt>
          <dd>
            <code>{o.order_id}</code> <CopyButton text={o.order_id} label="Copy order id" />
          </dd>
          <dt>External order id</dt>
          <dd>
            <code>{o.external_order_id}</code> <CopyButton text={o.external_order_id} label="Copy external order id" />
          </dd>
          <dt>Test</dt>
          <dd>
            {names.item ?? <code>{o.item_id}</code>}
            {names.item && <span className="muted small"> · item_id <code>{o.item_id}</code></span>}
          </dd>
          <dt>Program</dt>
          <dd>
            {names.program ?? <code>{o.program_id}</code>}
            {names.program && <span className="muted small"> · program_id <code>{o.program_id}</code></span>}
          </dd>
          <dt>Subject</dt>
          <dd>
            <code>{o.external_subject_id}</code>
          </dd>
          <dt>Transmission</dt>
          <dd>
            {humanize(o.transmission.status)} · acknowledgement {humanize(o.transmission.ack_status)}
            {o.transmission.external_order_ref && (
              <>
                {' '}
                · ref <code>{o.transmission.external_order_ref}</code>
              </>
            )}
          </dd>
          <dt>Requisition</dt>
          <dd>
            {humanize(o.requisition.state)}
            {o.requisition.requisition_id && (
              <>
                {' '}
                · <code>{o.requisition.requisition_id}</code>
              </>
            )}
          </dd>
          <dt>Accession</dt>
          <dd>{o.accession.accession_number ? <code>{o.accession.accession_number}</code> : '—'}</dd>
          <dt>Created</dt>
          <dd>{formatTime(o.created_at)}</dd>
          <dt>Updated</dt>
          <dd>{formatTime(o.updated_at)}</dd>
        </dl>
        <h3 className="h-small">Specimens</h3>
        {o.specimens.length === 0 ? (
          <p className="muted">No specimen collected yet.</p>
        ) : (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Specimens">
            <table className="compact">
              <thead>
                <tr>
                  <th scope="col">Specimen</th>
                  <th scope="col">Type</th>
                  <th scope="col">Status</th>
                  <th scope="col">Collected</th>
                  <th scope="col">Received</th>
                </tr>
              </thead>
              <tbody>
                {o.specimens.map((s) => (
                  <tr key={s.specimen_id}>
                    <td>
                      <code>{s.specimen_code}</code>
                      {s.recollection_of && <div className="muted small">replacement</div>}
                    </td>
                    <td>{humanize(s.specimen_type)}</td>
                    <td>
                      <Badge tone={s.status === 'rejected' ? 'bad' : 'neutral'}>{humanize(s.status)}</Badge>
                      {s.rejection_reason && <div className="muted small">{s.rejection_reason}</div>}
                    </td>
                    <td className="nowrap">{formatTime(s.collected_at)}</td>
                    <td className="nowrap">{formatTime(s.received_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </article>
    </section>
  );
}

/** The outcome of the action that led here (e.g. "Order … created"): scrolled into view and focused once shown. */
const reveal: RefCallback<HTMLElement> = (element) => {
  if (!element) return;
  // After the shell moves focus to the new screen (its effect runs after this element mounts).
  requestAnimationFrame(() => {
    element.scrollIntoView({ block: 'nearest' });
    element.focus({ preventScroll: true });
  });
};

/** Program and test names, read the way a partner resolves them: the program list and the program's catalog. */
function useOrderNames(programId: string | undefined, itemId: string | undefined): { program?: string; item?: string } {
  const trpc = useTRPC();
  const canPrograms = useCapability('programs.list');
  const canCatalog = useCapability('programs.catalog');
  const programs = useQuery({ ...trpc.programs.list.queryOptions({}), enabled: canPrograms.allowed, staleTime: 300_000 });
  const catalog = useQuery({ ...trpc.programs.catalog.queryOptions({ programId: programId ?? '' }), enabled: Boolean(programId) && canCatalog.allowed, staleTime: 300_000 });
  return {
    program: programs.data?.data.find((p) => p.program_id === programId)?.name,
    item: catalog.data?.data.find((i) => i.item_id === itemId)?.name,
  };
}

/** On a phone the order's sections stack up; this keeps each one a tap away (hash links would change the route). */
function JumpNav({ sections }: { sections: [id: string, label: string][] }) {
  const jump = (id: string) => {
    const heading = document.getElementById(id);
    if (!heading) return;
    heading.setAttribute('tabindex', '-1');
    heading.scrollIntoView({ block: 'start' });
    heading.focus({ preventScroll: true });
  };
  return (
    <nav aria-label="Sections of this order">
      <ul className="jump-nav">
        {sections.map(([id, label]) => (
          <li key={id}>
            <button type="button" className="button ghost small" onClick={() => jump(id)}>
              {label}
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
