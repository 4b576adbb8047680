import { useQuery } from '@tanstack/react-query';
import { Badge, Empty, ErrorNotice, Loading } from '../components/states';
import { formatTime, humanize } from '../format';
import { href } from '../routing';
import { useTRPC } from '../trpc';

export function OverviewPage() {
  const trpc = useTRPC();
  const health = useQuery(trpc.health.get.queryOptions({}));
  const lab = useQuery(trpc.lab.get.queryOptions({}));
  const programs = useQuery(trpc.programs.list.queryOptions({}));

  return (
    <section className="stack-lg">
      <header className="page-header">
        <h1>Overview</h1>
        <p className="lede">The laboratory and programs your sandbox key can see. Next: pick a <a href={href.fixtures}>fixture</a> to create an order.</p>
      </header>

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
              <dd>{health.data.data.version}</dd>
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
          <div className="table-wrap">
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
