import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { REQUEST_LOG_QUERY_MAX, REQUEST_LOG_SOURCES, SANDBOX_KEY_PREFIX_PATTERN, type RequestLogSource } from '@lop/contract';
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
/** The partner routes a request can be logged under: every one but the log's own (its reads are not logged). */
const LOGGED_ROUTES = Object.entries(REST_ROUTES)
  .filter(([procedure]) => procedure !== 'sandbox.requestLog')
  .map(([, r]) => r);
const ROUTES = [...new Set(LOGGED_ROUTES.map((r) => r.path))].sort();
const METHODS = [...new Set(LOGGED_ROUTES.map((r) => r.method))].sort();
const SOURCE_LABELS: Record<RequestLogSource, string> = { rest: 'REST', lop: 'lop', console: 'This console' };
const POLL_MS = 2_000;

const statusTone = (status: number) => (status >= 500 ? 'bad' : status >= 400 ? 'warn' : 'good');

/** A datetime-local value (the reader's own clock) as the API's ISO 8601 instant; undefined when empty or unreadable. */
function instantOf(local: string): string | undefined {
  if (!local) return undefined;
  const at = new Date(local);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
}

/**
 * The sandbox request log (docs/request-log.md): every partner REST request of this API client's
 * sandbox keys for 7 days, newest first, read through GET /v1/sandbox/request-log like `lop logs
 * tail`, with the same filters.
 */
export function LogsPage() {
  const trpc = useTRPC();
  const can = useCapability('sandbox.requestLog');
  const [statusClass, setStatusClass] = useState<StatusClass | ''>('');
  const [method, setMethod] = useState('');
  const [route, setRoute] = useState('');
  const [sources, setSources] = useState<readonly RequestLogSource[]>(REQUEST_LOG_SOURCES);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [keyPrefix, setKeyPrefix] = useState('');
  const [text, setText] = useState('');
  const [requestId, setRequestId] = useState('');
  const term = useSettled(requestId.trim(), 250);
  const q = useSettled(text.trim(), 250);
  const ids = { status: useId(), method: useId(), route: useId(), from: useId(), to: useId(), key: useId(), keyHint: useId(), text: useId(), textHint: useId(), requestId: useId(), range: useId() };
  const since = instantOf(from);
  const until = instantOf(to);
  const prefix = keyPrefix.trim();
  // A filter is sent only once it can be: a whole key prefix, a range that ends after it starts, at least one source.
  const prefixIncomplete = prefix !== '' && !SANDBOX_KEY_PREFIX_PATTERN.test(prefix);
  const rangeBackwards = since !== undefined && until !== undefined && since >= until;
  const noSource = sources.length === 0;
  const log = useQuery({
    ...trpc.sandbox.requestLog.queryOptions({
      limit: 100,
      ...(statusClass ? { status_class: statusClass } : {}),
      ...(method ? { method } : {}),
      ...(route ? { route } : {}),
      ...(sources.length < REQUEST_LOG_SOURCES.length && !noSource ? { source: sources.join(',') } : {}),
      ...(since ? { since } : {}),
      ...(until && !rangeBackwards ? { until } : {}),
      ...(prefix && !prefixIncomplete ? { key_prefix: prefix } : {}),
      ...(q ? { q } : {}),
      ...(term ? { request_id: term } : {}),
    }),
    enabled: can.allowed && can.known && !noSource && !rangeBackwards,
    placeholderData: (previous) => previous,
    refetchInterval: POLL_MS,
  });
  const rows = [...(log.data?.data.entries ?? [])].reverse();
  const filtered = Boolean(statusClass || method || route || sources.length < REQUEST_LOG_SOURCES.length || since || until || prefix || q || term);
  const lastRead = useLatestCall('sandbox.requestLog');
  const toggleSource = (source: RequestLogSource, on: boolean) => setSources(REQUEST_LOG_SOURCES.filter((s) => (s === source ? on : sources.includes(s))));
  const clear = () => {
    setStatusClass('');
    setMethod('');
    setRoute('');
    setSources(REQUEST_LOG_SOURCES);
    setFrom('');
    setTo('');
    setKeyPrefix('');
    setText('');
    setRequestId('');
  };

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
      <div className="toolbar log-filters" role="search" aria-label="Filter requests">
        <div className="field-inline">
          <label htmlFor={ids.status}>Status</label>
          <select id={ids.status} value={statusClass} onChange={(e) => setStatusClass(e.target.value as StatusClass | '')} disabled={!can.allowed}>
            <option value="">Any</option>
            {STATUS_CLASSES.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </div>
        <div className="field-inline">
          <label htmlFor={ids.method}>Method</label>
          <select id={ids.method} value={method} onChange={(e) => setMethod(e.target.value)} disabled={!can.allowed}>
            <option value="">Any</option>
            {METHODS.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </div>
        <div className="field-inline">
          <label htmlFor={ids.route}>Route</label>
          <select id={ids.route} value={route} onChange={(e) => setRoute(e.target.value)} disabled={!can.allowed}>
            <option value="">Any</option>
            {ROUTES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </div>
        <fieldset className="log-sources" disabled={!can.allowed}>
          <legend>Source</legend>
          {REQUEST_LOG_SOURCES.map((source) => (
            <label key={source} className="checkbox">
              <input type="checkbox" checked={sources.includes(source)} onChange={(e) => toggleSource(source, e.target.checked)} /> {SOURCE_LABELS[source]}
            </label>
          ))}
        </fieldset>
        <div className="field-inline">
          <label htmlFor={ids.from}>From</label>
          <input id={ids.from} type="datetime-local" className="since" value={from} onChange={(e) => setFrom(e.target.value)} disabled={!can.allowed} />
        </div>
        <div className="field-inline">
          <label htmlFor={ids.to}>To</label>
          <input
            id={ids.to}
            type="datetime-local"
            className="since"
            value={to}
            onChange={(e) => setTo(e.target.value)}
            disabled={!can.allowed}
            aria-invalid={rangeBackwards || undefined}
            aria-describedby={rangeBackwards ? ids.range : undefined}
          />
        </div>
        <div className="field-inline">
          <label htmlFor={ids.key}>Key prefix</label>
          <input
            id={ids.key}
            type="search"
            className="search key-prefix"
            value={keyPrefix}
            placeholder="lop_test_…"
            maxLength={13}
            spellCheck={false}
            autoComplete="off"
            onChange={(e) => setKeyPrefix(e.target.value)}
            disabled={!can.allowed}
            aria-invalid={prefixIncomplete || undefined}
            aria-describedby={ids.keyHint}
          />
        </div>
        <div className="field-inline">
          <label htmlFor={ids.text}>Text in bodies</label>
          <input id={ids.text} type="search" className="search" value={text} maxLength={REQUEST_LOG_QUERY_MAX} placeholder="order_id, error code…" onChange={(e) => setText(e.target.value)} disabled={!can.allowed} aria-describedby={ids.textHint} />
        </div>
        <div className="field-inline">
          <label htmlFor={ids.requestId}>request_id</label>
          <input id={ids.requestId} type="search" className="search" value={requestId} placeholder="req_…" onChange={(e) => setRequestId(e.target.value)} disabled={!can.allowed} />
        </div>
        {filtered && (
          <button type="button" className="button secondary" onClick={clear}>
            Clear filters
          </button>
        )}
      </div>
      <p id={ids.keyHint} className={prefixIncomplete ? 'note note-warn' : 'muted small'}>
        {prefixIncomplete
          ? 'A key prefix is lop_test_ and the next four characters of the key, e.g. lop_test_AbCd: the filter applies once it is whole.'
          : 'Key prefix: lop_test_ and the next four characters of the key, as the Key column shows it.'}
      </p>
      <p id={ids.textHint} className="muted small">
        Text in bodies finds only what the log keeps of a body — the service’s ids, enums, numbers, timestamps, field names and error codes — ignoring case. Your own text
        is stored as its type and size, so it is never found.
      </p>
      {rangeBackwards && (
        <p id={ids.range} className="note note-warn" role="alert">
          “To” must be later than “From”.
        </p>
      )}
      <Inspector label="Request log read" call={lastRead} />
      <article className="card">
        {!can.allowed ? (
          <p className="note note-warn reason">{can.reason}</p>
        ) : noSource ? (
          <Empty>Choose at least one source.</Empty>
        ) : rangeBackwards ? (
          <Empty>No request can be logged in this time range.</Empty>
        ) : log.isPending ? (
          <Loading label="Reading the request log…" />
        ) : log.isError && !log.data ? (
          <ErrorNotice error={log.error} onRetry={() => log.refetch()} />
        ) : rows.length === 0 ? (
          <Empty>{filtered ? 'No logged request matches these filters.' : 'No requests yet. Call the API with a sandbox key (or act in this console): each request appears here.'}</Empty>
        ) : (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Logged requests">
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
                      {e.source === 'lop' && <div className="muted small">from lop</div>}
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
                  {e.source === 'console' ? '(this console’s action for this route)' : e.source === 'lop' ? '(REST, from lop)' : '(REST)'}
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
