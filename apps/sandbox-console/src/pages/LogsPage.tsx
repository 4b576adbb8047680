import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { useCapability } from '../capabilities';
import { Inspector } from '../components/Inspector';
import { Badge, Empty, ErrorNotice, Loading } from '../components/states';
import { formatTime } from '../format';
import { useLatestCall } from '../inspector/call-log';
import { REST_ROUTES } from '../inspector/rest-routes';
import { href } from '../routing';
import { useSettled } from '../use-settled';
import { useTRPC } from '../trpc';

const STATUS_CLASSES = ['2xx', '4xx', '5xx'] as const;
type StatusClass = (typeof STATUS_CLASSES)[number];
/** The routes a request can be logged under: every partner route but the log's own (its reads are not logged). */
const ROUTES = [...new Set(Object.entries(REST_ROUTES).filter(([procedure]) => procedure !== 'sandbox.requestLog').map(([, r]) => `${r.method} ${r.path}`))].sort(
  (a, b) => a.split(' ')[1].localeCompare(b.split(' ')[1]) || a.localeCompare(b),
);
const POLL_MS = 2_000;

const statusTone = (status: number) => (status >= 500 ? 'bad' : status >= 400 ? 'warn' : 'good');

/**
 * The sandbox request log (docs/request-log.md): every partner REST request of this API client's
 * sandbox keys for 7 days, newest first, read through GET /v1/sandbox/request-log like `lop logs tail`.
 */
export function LogsPage() {
  const trpc = useTRPC();
  const can = useCapability('sandbox.requestLog');
  const [statusClass, setStatusClass] = useState<StatusClass | ''>('');
  const [route, setRoute] = useState('');
  const [requestId, setRequestId] = useState('');
  const term = useSettled(requestId.trim(), 250);
  const statusId = useId();
  const routeId = useId();
  const requestIdId = useId();
  const template = route ? route.slice(route.indexOf(' ') + 1) : undefined;
  const log = useQuery({
    ...trpc.sandbox.requestLog.queryOptions({
      limit: 100,
      ...(statusClass ? { status_class: statusClass } : {}),
      ...(template ? { route: template } : {}),
      ...(term ? { request_id: term } : {}),
    }),
    enabled: can.allowed && can.known,
    placeholderData: (previous) => previous,
    refetchInterval: POLL_MS,
  });
  // A route template is shared by methods only for distinct paths today; the method narrows the view.
  const method = route ? route.slice(0, route.indexOf(' ')) : undefined;
  const rows = [...(log.data?.data.entries ?? [])].filter((e) => !method || e.method === method).reverse();
  const filtered = Boolean(statusClass || route || term);
  const lastRead = useLatestCall('sandbox.requestLog');

  return (
    <section className="stack-lg">
      <header className="page-header">
        <h1>Logs</h1>
        <p className="lede">
          Every partner REST request your sandbox keys made in the last 7 days — from curl, <code>lop</code>, your integration and this console — newest first. A
          request appears a second or so after its response. Open one for its bodies: patient and provider fields, keys and secrets are never stored.
          <code> lop logs tail</code> follows the same log in a terminal.
        </p>
      </header>
      <div className="toolbar" role="search" aria-label="Filter requests">
        <div className="field-inline">
          <label htmlFor={statusId}>Status</label>
          <select id={statusId} value={statusClass} onChange={(e) => setStatusClass(e.target.value as StatusClass | '')} disabled={!can.allowed}>
            <option value="">Any</option>
            {STATUS_CLASSES.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </div>
        <div className="field-inline">
          <label htmlFor={routeId}>Route</label>
          <select id={routeId} value={route} onChange={(e) => setRoute(e.target.value)} disabled={!can.allowed}>
            <option value="">Any</option>
            {ROUTES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </div>
        <div className="field-inline">
          <label htmlFor={requestIdId}>request_id</label>
          <input id={requestIdId} type="search" className="search" value={requestId} placeholder="req_…" onChange={(e) => setRequestId(e.target.value)} disabled={!can.allowed} />
        </div>
      </div>
      <Inspector label="Request log read" call={lastRead} />
      <article className="card">
        {!can.allowed ? (
          <p className="note note-warn reason">{can.reason}</p>
        ) : log.isPending ? (
          <Loading label="Reading the request log…" />
        ) : log.isError && !log.data ? (
          <ErrorNotice error={log.error} onRetry={() => log.refetch()} />
        ) : rows.length === 0 ? (
          <Empty>{filtered ? 'No logged request matches these filters.' : 'No requests yet. Call the API with a sandbox key (or act in this console): each request appears here.'}</Empty>
        ) : (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Logged sandbox requests, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Request</th>
                  <th scope="col">Status</th>
                  <th scope="col">Duration</th>
                  <th scope="col">request_id</th>
                  <th scope="col">Key</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((e) => (
                  <tr key={e.request_id}>
                    <td className="nowrap">{formatTime(e.occurred_at)}</td>
                    <td>
                      <code>
                        {e.method} {e.route}
                      </code>
                      {e.source === 'console' && <div className="muted small">from this console</div>}
                    </td>
                    <td>
                      <Badge tone={statusTone(e.status)}>{e.status}</Badge> {e.error_code && <code>{e.error_code}</code>}
                    </td>
                    <td className="nowrap">{e.duration_ms} ms</td>
                    <td>
                      <a href={href.logEntry(e.request_id)}>{e.request_id}</a>
                    </td>
                    <td>
                      <code>{e.key_prefix}…</code>
                    </td>
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

/** One logged request: its line, and the bodies as stored (redacted, truncated past 8 KB). */
export function LogEntryPage({ requestId }: { requestId: string }) {
  const trpc = useTRPC();
  const can = useCapability('console.requestLogEntry');
  const entry = useQuery({ ...trpc.console.requestLogEntry.queryOptions({ request_id: requestId }), enabled: can.allowed && can.known });
  const e = entry.data?.data;
  return (
    <section className="stack-lg">
      <p>
        <a href={href.logs}>← All requests</a>
      </p>
      <header className="page-header">
        <h1>
          Request <code>{requestId}</code>
        </h1>
      </header>
      {!can.allowed ? (
        <p className="note note-warn reason">{can.reason}</p>
      ) : entry.isPending ? (
        <Loading label="Reading the request…" />
      ) : entry.isError ? (
        <ErrorNotice error={entry.error} title="This request is not in the log." />
      ) : (
        e && (
          <>
            <article className="card">
              <dl className="facts">
                <dt>Request</dt>
                <dd>
                  <code>
                    {e.method} {e.route}
                  </code>{' '}
                  {e.source === 'console' ? '(this console’s action for this route)' : '(REST)'}
                </dd>
                <dt>Status</dt>
                <dd>
                  <Badge tone={statusTone(e.status)}>{e.status}</Badge> {e.error_code ? <code>{e.error_code}</code> : null}
                </dd>
                <dt>Time</dt>
                <dd>{formatTime(e.occurred_at)}</dd>
                <dt>Duration</dt>
                <dd>{e.duration_ms} ms</dd>
                <dt>Key</dt>
                <dd>
                  <code>{e.key_prefix}…</code>
                </dd>
              </dl>
            </article>
            {e.bodies_withheld ? (
              <p className="note note-warn reason">
                {e.bodies_withheld_reason === 'order_not_readable'
                  ? "The bodies are not shown: the request was about an order your API client may no longer read (its program was withdrawn), so the log withholds it as the API does."
                  : 'The bodies are not shown: this key lacks the scope the route needs.'}
              </p>
            ) : (
              <>
                <Body title="Request body" value={e.request_body} empty="No body (the route takes none, or none was sent)." />
                <Body title="Response body" value={e.response_body} empty="No body." />
              </>
            )}
            <p className="muted small">
              Stored through an allow-list: identifiers of the service, enums, numbers, booleans and timestamps are kept; your own text (external ids, free text,
              unknown fields, personal data) is kept only as its type and size, shown as <code>{'{"$redacted": "string", "length": 21}'}</code>; results are kept as
              shape only. No header or query string is kept; bodies past 8 KB are cut. Path parameters are not kept: the route template stands for the path.
            </p>
          </>
        )
      )}
    </section>
  );
}

const isRedacted = (value: unknown): boolean => typeof value === 'object' && value !== null && !Array.isArray(value) && '$redacted' in value;

/** A body as indented JSON, each redacted value (docs/request-log.md) on one line: `{"$redacted": "string", "length": 21}`. */
export function bodyText(value: unknown): string {
  const compact: string[] = [];
  const text = JSON.stringify(
    value,
    (_key, inner: unknown) => {
      if (!isRedacted(inner)) return inner;
      // jsonb orders an object's keys by length: `$redacted` is put first again, where it reads.
      const { $redacted, ...rest } = inner as Record<string, unknown>;
      compact.push(JSON.stringify({ $redacted, ...rest }).replace(/":/g, '": ').replace(/,"/g, ', "'));
      return `\u0000${compact.length - 1}\u0000`;
    },
    2,
  );
  return text.replace(/"\\u0000(\d+)\\u0000"/g, (_, index: string) => compact[Number(index)]);
}

function Body({ title, value, empty }: { title: string; value: unknown; empty: string }) {
  return (
    <article className="card">
      <h2>{title}</h2>
      {value === null || value === undefined ? (
        <p className="muted">{empty}</p>
      ) : (
        <pre className="json" tabIndex={0} aria-label={title}>
          {bodyText(value)}
        </pre>
      )}
    </article>
  );
}
