import { PARTNER_API_VERSION } from '@lop/contract';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { EventStreamProvider, useEventStream } from '../event-stream';
import { EventsPage } from '../pages/EventsPage';
import { FixturesPage } from '../pages/FixturesPage';
import { LogEntryPage, LogsPage } from '../pages/LogsPage';
import { OrderPage } from '../pages/OrderPage';
import { OrdersPage } from '../pages/OrdersPage';
import { OverviewPage } from '../pages/OverviewPage';
import { WebhookEndpointPage } from '../pages/WebhookEndpointPage';
import { WebhooksPage } from '../pages/WebhooksPage';
import { href, useRoute, type Route } from '../routing';
import { useKeySession } from '../capabilities';
import { relativeTime } from '../format';
import { keyHint, type Session } from '../session';
import { useTRPC } from '../trpc';

const NAV: { page: Route['page']; label: string; to: string }[] = [
  { page: 'overview', label: 'Overview', to: href.overview },
  { page: 'fixtures', label: 'Fixtures', to: href.fixtures },
  { page: 'orders', label: 'Orders', to: href.orders },
  { page: 'events', label: 'Events', to: href.events },
  { page: 'webhooks', label: 'Webhooks', to: href.webhooks },
  { page: 'logs', label: 'Logs', to: href.logs },
];

export function ConsoleShell({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const trpc = useTRPC();
  const route = useRoute();
  const lab = useQuery(trpc.lab.get.queryOptions({}));
  const heading = useRef<HTMLDivElement>(null);
  const keySession = useKeySession();
  const expiresAt = keySession.data?.data.expires_at;

  // After navigating, move focus to the new screen so keyboard and screen-reader users land on it.
  const current =
    route.page === 'order' ? `order:${route.orderId}` : route.page === 'webhook' ? `webhook:${route.subscriptionId}:${route.deliveryId ?? ''}` : route.page === 'log' ? `log:${route.requestId}` : route.page;
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    heading.current?.focus();
  }, [current]);

  const active = route.page === 'order' ? 'orders' : route.page === 'webhook' ? 'webhooks' : route.page === 'log' ? 'logs' : route.page;
  return (
    <EventStreamProvider>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <div className="topbar-inner">
          <div className="brand">
            <span className="brand-mark" aria-hidden="true">
              ◆
            </span>
            <span>
              <strong>Sandbox console</strong>
              <span className="muted small brand-lab">{lab.data ? lab.data.data.display_name : ' '}</span>
            </span>
          </div>
          <nav aria-label="Console">
            <ul className="nav">
              {NAV.map((item) => (
                <li key={item.page}>
                  <a href={item.to} aria-current={active === item.page ? 'page' : undefined}>
                    {item.label}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
          <div className="topbar-key">
            <span className="badge badge-info">sandbox</span>
            <code className="muted small" title="The key in use (shortened)">
              {keySession.data ? `${keySession.data.data.key_prefix}…` : keyHint(session.key)}
            </code>
            {expiresAt && <span className="muted small">expires {relativeTime(expiresAt)}</span>}
            <button type="button" className="button ghost small" onClick={onSignOut}>
              Forget key
            </button>
          </div>
        </div>
      </header>
      <main id="main" className="content">
        <div ref={heading} tabIndex={-1} className="focus-target" aria-label="Page content">
          {/* Keyed by the screen's identity: moving from one order (or endpoint) to another mounts a fresh
              page, so no banner, scenario choice or inspector state of the previous one can carry over. */}
          <Screen key={current} route={route} />
        </div>
      </main>
      <footer className="footer muted small">
        <LiveStatus /> · API {PARTNER_API_VERSION} · service build {session.version} · calls go to <code>/api/trpc</code> with your key, the same procedures as partner REST ·{' '}
        <a href="/docs">API reference</a> · <a href="/docs/guides">Guides</a>
      </footer>
    </EventStreamProvider>
  );
}

function Screen({ route }: { route: Route }) {
  switch (route.page) {
    case 'overview':
      return <OverviewPage />;
    case 'fixtures':
      return <FixturesPage />;
    case 'orders':
      return <OrdersPage />;
    case 'order':
      return <OrderPage orderId={route.orderId} />;
    case 'events':
      return <EventsPage />;
    case 'webhooks':
      return <WebhooksPage />;
    case 'webhook':
      return <WebhookEndpointPage key={route.subscriptionId} subscriptionId={route.subscriptionId} deliveryId={route.deliveryId} />;
    case 'logs':
      return <LogsPage />;
    case 'log':
      return <LogEntryPage requestId={route.requestId} />;
    default:
      return (
        <section>
          <h1>Not found</h1>
          <p>
            There is no screen at <code>{route.path}</code>. <a href={href.overview}>Back to the overview</a>.
          </p>
        </section>
      );
  }
}

function LiveStatus() {
  const stream = useEventStream();
  if (stream.blocked) return <span>Event stream: not read (the key lacks events:read)</span>;
  if (stream.reconnecting) return <span className="connection-down">● Not connected: the API cannot be reached, reconnecting…</span>;
  if (stream.error) return <span>Event stream: not readable</span>;
  return (
    <span>
      Event stream: {stream.events.length} event{stream.events.length === 1 ? '' : 's'}
      {stream.live ? ', polling live' : ', paused'}
    </span>
  );
}
