import { useQuery, type UseQueryResult } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { useCapability } from '../capabilities';
import { formatTime, humanize } from '../format';
import { inputIs, useLatestCall } from '../inspector/call-log';
import { useTRPC, type Outputs } from '../trpc';
import { CopyButton } from './CopyButton';
import { Inspector } from './Inspector';
import { Badge, Empty, ErrorNotice, Loading } from './states';

type Collection = Outputs['results']['list']['data'];
type Version = Collection['results'][number];

const PENDING_TEXT: Record<string, string> = {
  not_yet_released: 'No version has been released yet.',
  update_not_yet_released: 'A newer version exists but is not released yet; the released versions below stay authoritative until it is.',
};

/** The lineage of released versions, oldest first, with superseded versions marked, and each version’s observations as supplied. */
export function ResultsPanel({ orderId }: { orderId: string }) {
  const trpc = useTRPC();
  const can = useCapability('results.list');
  const results = useQuery({ ...trpc.results.list.queryOptions({ orderId }), enabled: can.allowed && can.known });
  const lastCall = useLatestCall('results.list', inputIs({ orderId }));
  if (!can.allowed) return <p className="note note-warn reason">{can.reason}</p>;
  return (
    <div className="stack">
      <Inspector label="Results request" call={lastCall} />
      <ResultsBody results={results} />
    </div>
  );
}

function ResultsBody({ results }: { results: UseQueryResult<Outputs['results']['list'], unknown> }) {
  if (results.isPending) return <Loading label="Reading results…" />;
  if (results.isError) return <ErrorNotice error={results.error} onRetry={() => results.refetch()} />;
  const collection = results.data.data;
  return (
    <div className="stack">
      {collection.pending && (
        <p className="note" role="status">
          <Badge tone="info">pending</Badge> {PENDING_TEXT[collection.pending_reason ?? ''] ?? 'A result is expected.'}
        </p>
      )}
      {collection.version_lineage.length === 0 ? (
        <Empty>No released result yet. Results appear here when the laboratory (or a scenario) releases a version.</Empty>
      ) : (
        <>
          <ol className="lineage" aria-label="Result versions, oldest first">
            {collection.version_lineage.map((entry) => (
              <li key={entry.result_id} className={`lineage-step${entry.is_current ? ' is-current' : ''}${entry.superseded_by_result_id ? ' is-superseded' : ''}`}>
                <span className="lineage-version">v{entry.version}</span>
                <Badge tone={entry.state === 'partial' ? 'info' : entry.state === 'final' ? 'good' : 'warn'}>{entry.state}</Badge>
                {entry.is_current ? <Badge tone="good">current</Badge> : entry.superseded_by_result_id ? <Badge tone="neutral">superseded</Badge> : null}
                <span className="muted small">
                  {humanize(entry.version_type)} · {formatTime(entry.released_at)}
                </span>
              </li>
            ))}
          </ol>
          {[...collection.results].reverse().map((version) => (
            <VersionCard
              key={version.result_id}
              version={version}
              current={version.result_id === collection.current_result_id}
              supersededBy={collection.version_lineage.find((l) => l.result_id === version.result_id)?.superseded_by_result_id ?? null}
              versionOf={(id) => collection.version_lineage.find((l) => l.result_id === id)?.version}
            />
          ))}
        </>
      )}
    </div>
  );
}

function VersionCard({ version, current, supersededBy, versionOf }: { version: Version; current: boolean; supersededBy: string | null; versionOf: (id: string) => number | undefined }) {
  const [raw, setRaw] = useState(false);
  const rawId = useId();
  const columns = observationColumns(version.observations);
  return (
    <article className={`version-card${supersededBy ? ' is-superseded' : ''}`} aria-label={`Result version ${version.version}`}>
      <header className="version-header">
        <h3>
          Version {version.version} <Badge tone={version.state === 'partial' ? 'info' : version.state === 'final' ? 'good' : 'warn'}>{version.state}</Badge>{' '}
          {current && <Badge tone="good">current</Badge>}
          {supersededBy && <Badge tone="neutral">superseded by v{versionOf(supersededBy) ?? '?'}</Badge>}
          {version.is_critical && <Badge tone="bad">critical</Badge>}
        </h3>
        <p className="muted small">
          Released {formatTime(version.released_at)} · {version.performing_laboratory} · {version.performing_laboratory_system} · source id <code>{version.source_result_id}</code>
          {version.supersedes_result_id && <> · supersedes v{versionOf(version.supersedes_result_id) ?? '?'}</>}
        </p>
      </header>
      {version.observations.length === 0 ? (
        <Empty>No observations in this version.</Empty>
      ) : (
        <div className="table-wrap">
          <table className="observations">
            <caption className="visually-hidden">Observations of version {version.version}, exactly as supplied</caption>
            <thead>
              <tr>
                {columns.map((c) => (
                  <th key={c} scope="col">
                    <code>{c}</code>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {version.observations.map((o, i) => (
                <tr key={i}>
                  {columns.map((c) => (
                    <td key={c}>
                      <SuppliedValue value={(o as Record<string, unknown>)[c]} present={c in o} />
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p className="muted small">Values, units, reference intervals and flags exactly as the laboratory supplied them: strings stay strings, nothing is converted. Boxed values are JSON numbers, booleans or null; · means the field was not supplied.</p>
      <div className="row">
        <button type="button" className="button ghost small" aria-expanded={raw} aria-controls={rawId} onClick={() => setRaw(!raw)}>
          {raw ? 'Hide' : 'Show'} JSON as returned
        </button>
        <CopyButton text={JSON.stringify(version, null, 2)} label="Copy JSON" /> <CopyButton text={version.result_id} label="Copy result_id" />
      </div>
      {raw && (
        <pre id={rawId} className="json" tabIndex={0}>
          {JSON.stringify(version, null, 2)}
        </pre>
      )}
    </article>
  );
}

/**
 * Column order: the keys as the laboratory supplied them, first seen first; `loinc` last, because
 * it is the API's own marker (`not_modeled`), not something the laboratory sent.
 */
function observationColumns(observations: Record<string, unknown>[]): string[] {
  const columns: string[] = [];
  for (const o of observations) for (const key of Object.keys(o)) if (key !== 'loinc' && !columns.includes(key)) columns.push(key);
  if (observations.some((o) => 'loinc' in o)) columns.push('loinc');
  return columns;
}

/** Strings are shown as they are (“<10” stays “<10”, “45.0” stays “45.0”); anything else as its JSON. */
function SuppliedValue({ value, present }: { value: unknown; present: boolean }) {
  if (!present) return <span className="muted" aria-label="not supplied">·</span>;
  if (typeof value === 'string') return <span className={value.length > 24 ? 'supplied supplied-long' : 'supplied'}>{value}</span>;
  return <code className="supplied">{JSON.stringify(value)}</code>;
}
