import { PARTNER_API_VERSION } from '@lop/contract';
import { useQuery } from '@tanstack/react-query';
import { useKeySession } from '../capabilities';
import { CopyButton } from '../components/CopyButton';
import { Badge, Empty, ErrorNotice, Loading } from '../components/states';
import { formatTime, humanize, relativeTime } from '../format';
import { href } from '../routing';
import { useTRPC } from '../trpc';

export function OverviewPage() {
  const trpc = useTRPC();
  const health = useQuery(trpc.health.get.queryOptions({}));
  const lab = useQuery(trpc.lab.get.queryOptions({}));
  const programs = useQuery(trpc.programs.list.queryOptions({}));
  const session = useKeySession();

  return (
    <section className="stack-lg">
      <header className="page-header">
        <h1>Overview</h1>
        <p className="lede">
          The laboratory and programs your sandbox key can see. Next: pick a <a href={href.fixtures}>fixture</a> to create an order. Every route is documented,
          webhook payloads included, in the <a href="/docs">API reference</a>; how to integrate (keys, idempotency, events, webhook verification, errors) in the{' '}
          <a href="/docs/guides">guides</a>.
        </p>
      </header>

      <article className="card" aria-labelledby="key-title">
        <h2 id="key-title">API key</h2>
        {session.isPending ? (
          <Loading label="Reading the key…" />
        ) : session.isError ? (
          <ErrorNotice error={session.error} onRetry={() => session.refetch()} />
        ) : (
          <div className="key-facts">
            <dl className="facts">
              <dt>Key</dt>
              <dd>
                <code>{session.data.data.key_prefix}…</code> <span className="muted small">(the key itself is never shown again)</span>
              </dd>
              <dt>Environment</dt>
              <dd>
                <Badge tone="info">{session.data.data.environment}</Badge>
              </dd>
              <dt>Expires</dt>
              <dd>
                {session.data.data.expires_at ? (
                  <>
                    {formatTime(session.data.data.expires_at)} <span className="muted">({relativeTime(session.data.data.expires_at)})</span>
                  </>
                ) : (
                  'never'
                )}
              </dd>
              <dt>API client</dt>
              <dd>
                {session.data.data.client_name} <code>{session.data.data.client_id}</code> <CopyButton text={session.data.data.client_id} label="Copy client id" />
              </dd>
            </dl>
            <div>
              <h3 className="h-small">Scopes</h3>
              <ul className="scopes" aria-label="Scopes of this key">
                {session.data.data.scopes.map((s) => (
                  <li key={s} className="scope scope-granted">
                    <span aria-hidden="true">✓</span> <code>{s}</code>
                  </li>
                ))}
                {session.data.data.missing_scopes.map((s) => (
                  <li key={s} className="scope scope-missing">
                    <span aria-hidden="true">✗</span> <code>{s}</code> <span className="visually-hidden">(not granted)</span>
                    <span className="muted small"> not granted</span>
                  </li>
                ))}
              </ul>
              {session.data.data.missing_scopes.length > 0 && <p className="muted small">Actions that need a missing scope are disabled, with the reason next to them.</p>}
            </div>
          </div>
        )}
      </article>

      <div className="grid-2">
        <article className="card" aria-labelledby="env-title">
          <h2 id="env-title">Environment</h2>
          {health.isPending ? (
            <Loading label="Reading health…" />
          ) : health.isError ? (
            <ErrorNotice error={health.error} onRetry={() => health.refetch()} />
          ) : (
            <dl className="facts">
              <dt>Environment</dt>
              <dd>
                <Badge tone="info">{health.data.data.environment}</Badge> every order is synthetic and can be simulated
              </dd>
              <dt>Status</dt>
              <dd>{health.data.data.status}</dd>
              <dt>API version</dt>
              <dd>
                <code>{PARTNER_API_VERSION}</code> <span className="muted small">(the /{PARTNER_API_VERSION} in every path)</span>
              </dd>
              <dt>Service build</dt>
              <dd>
                <code>{health.data.data.version}</code> <span className="muted small">(the release running; says nothing about compatibility)</span>
              </dd>
              <dt>Server time</dt>
              <dd>{formatTime(health.data.data.server_time)}</dd>
            </dl>
          )}
        </article>

        <article className="card" aria-labelledby="lab-title">
          <h2 id="lab-title">Laboratory</h2>
          {lab.isPending ? (
            <Loading label="Reading the laboratory…" />
          ) : lab.isError ? (
            <ErrorNotice error={lab.error} onRetry={() => lab.refetch()} />
          ) : (
            <dl className="facts">
              <dt>Name</dt>
              <dd>
                <strong>{lab.data.data.display_name}</strong>
                <span className="muted"> · {lab.data.data.legal_name}</span>
              </dd>
              <dt>Laboratory id</dt>
              <dd>
                <code>{lab.data.data.laboratory_id}</code>
              </dd>
              <dt>Jurisdictions</dt>
              <dd>{lab.data.data.jurisdictions.join(', ') || '—'}</dd>
              <dt>Service geography</dt>
              <dd>{lab.data.data.service_geography.join(', ') || '—'}</dd>
              <dt>Collection methods</dt>
              <dd>{lab.data.data.collection_methods.map(humanize).join(', ') || '—'}</dd>
              <dt>Specimens</dt>
              <dd>{lab.data.data.specimen_categories.map(humanize).join(', ') || '—'}</dd>
            </dl>
          )}
        </article>
      </div>

      <article className="card" aria-labelledby="programs-title">
        <h2 id="programs-title">Granted programs</h2>
        {programs.isPending ? (
          <Loading label="Reading programs…" />
        ) : programs.isError ? (
          <ErrorNotice error={programs.error} onRetry={() => programs.refetch()} />
        ) : programs.data.data.length === 0 ? (
          <Empty>No program is granted to this API client in the sandbox. An operator grants them with <code>npm run admin -- programs grant</code>.</Empty>
        ) : (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Granted programs">
            <table>
              <thead>
                <tr>
                  <th scope="col">Program</th>
                  <th scope="col">Status</th>
                  <th scope="col">Currency</th>
                  <th scope="col">Program id</th>
                </tr>
              </thead>
              <tbody>
                {programs.data.data.map((p) => (
                  <tr key={p.program_id}>
                    <td>{p.name}</td>
                    <td>
                      <Badge tone={p.status === 'active' ? 'good' : 'neutral'}>{p.status}</Badge>
                    </td>
                    <td>{p.currency}</td>
                    <td>
                      <code>{p.program_id}</code>
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
