import { useMutation, useQuery, type UseQueryResult } from '@tanstack/react-query';
import { useEffect, useId, useState } from 'react';
import { useCapability } from '../capabilities';
import { formatTime, humanize } from '../format';
import { inputIs, useLatestCall } from '../inspector/call-log';
import { inputFromRestPath } from '../inspector/rest-routes';
import { diffObservations, directionOf, labelOf, readingColumns, severityOf, suppliedText, type Change, type Direction, type Observation } from '../results-reading';
import { describeError, useTRPC, useTRPCClient, type Outputs } from '../trpc';
import { CopyButton } from './CopyButton';
import { FhirPanel } from './FhirPanel';
import { Inspector } from './Inspector';
import { Badge, Empty, ErrorNotice, Loading } from './states';

type Collection = Outputs['results']['list']['data'];
type Version = Collection['results'][number];

const PENDING_TEXT: Record<string, string> = {
  not_yet_released: 'No version has been released yet.',
  update_not_yet_released: 'A newer version exists but is not released yet; the released versions below stay authoritative until it is.',
};

/** The current released version's critical observations, for the banner on the order header. */
export function criticalObservations(collection: Collection | undefined): Observation[] {
  const current = collection?.results.find((r) => r.result_id === collection.current_result_id);
  if (!current?.is_critical) return [];
  const flagged = (current.observations as Observation[]).filter((o) => severityOf(o) === 'critical');
  return flagged.length > 0 ? flagged : (current.observations as Observation[]);
}

/** "HGB (Hemoglobin) 6.1 g/dL LL": an observation in one line, values exactly as supplied. */
export function observationLine(o: Observation): string {
  const columns = readingColumns([o]).filter((c) => ['Value', 'Unit', 'Flag'].includes(c.header));
  return [labelOf(o), ...columns.map((c) => o[c.key]).filter((v) => v !== null && v !== undefined && v !== '').map(suppliedText)].join(' ');
}

/** The lineage of released versions, newest first below it, each readable as a report, with what changed and its report document. */
export function ResultsPanel({ orderId }: { orderId: string }) {
  const trpc = useTRPC();
  const can = useCapability('results.list');
  const results = useQuery({ ...trpc.results.list.queryOptions({ orderId }), enabled: can.allowed && can.known });
  const lastCall = useLatestCall('results.list', inputIs({ orderId }));
  if (!can.allowed) return <p className="note note-warn reason">{can.reason}</p>;
  return (
    <div className="stack">
      <Inspector label="Results request" call={lastCall} />
      <ResultsBody results={results} orderId={orderId} />
    </div>
  );
}

function ResultsBody({ results, orderId }: { results: UseQueryResult<Outputs['results']['list'], unknown>; orderId: string }) {
  if (results.isPending) return <Loading label="Reading results…" />;
  if (results.isError) return <ErrorNotice error={results.error} onRetry={() => results.refetch()} />;
  const collection = results.data.data;
  const versionOf = (id: string | null) => collection.version_lineage.find((l) => l.result_id === id)?.version;
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
          {[...collection.results].reverse().map((version) => {
            const previous = collection.results.find((r) => r.result_id === version.supersedes_result_id);
            return (
              <VersionCard
                key={version.result_id}
                orderId={orderId}
                version={version}
                previous={previous}
                current={version.result_id === collection.current_result_id}
                supersededBy={versionOf(collection.version_lineage.find((l) => l.result_id === version.result_id)?.superseded_by_result_id ?? null)}
              />
            );
          })}
        </>
      )}
    </div>
  );
}

function VersionCard({ orderId, version, previous, current, supersededBy }: { orderId: string; version: Version; previous?: Version; current: boolean; supersededBy?: number }) {
  const [raw, setRaw] = useState(false);
  const rawId = useId();
  const fhir = useCapability('results.fhir');
  const observations = version.observations as Observation[];
  const columns = readingColumns(observations);
  return (
    <article className={`version-card${supersededBy ? ' is-superseded' : ''}${version.is_critical ? ' is-critical' : ''}`} aria-label={`Result version ${version.version}`}>
      <header className="version-header">
        <h3>
          Version {version.version} <Badge tone={version.state === 'partial' ? 'info' : version.state === 'final' ? 'good' : 'warn'}>{version.state}</Badge>{' '}
          {current && <Badge tone="good">current</Badge>}
          {supersededBy && <Badge tone="neutral">superseded by v{supersededBy}</Badge>}
          {version.is_critical && <Badge tone="bad">⚠ critical</Badge>}
        </h3>
        <p className="muted small">
          Released {formatTime(version.released_at)} · {version.performing_laboratory} · {version.performing_laboratory_system} · source id <code>{version.source_result_id}</code>
          {previous && <> · supersedes v{previous.version}</>}
        </p>
      </header>
      {previous && <WhatChanged from={previous} to={version} />}
      {observations.length === 0 ? (
        <Empty>No observations in this version.</Empty>
      ) : (
        <div className="table-wrap" tabIndex={0} role="region" aria-label={`Observations of v${version.version}`}>
          <table className="observations">
            <caption className="visually-hidden">Observations of version {version.version}, exactly as supplied</caption>
            <thead>
              <tr>
                {columns.map((c) => (
                  <th key={c.key} scope="col" title={c.header === c.key ? undefined : `supplied as ${c.key}`}>
                    {c.header}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {observations.map((o, i) => {
                const severity = severityOf(o);
                return (
                  <tr key={i} className={`severity-${severity}`} data-severity={severity}>
                    {columns.map((c, j) => (
                      <td key={c.key}>
                        {j === 0 && severity !== 'normal' && <SeverityMark severity={severity} direction={directionOf(o)} />}
                        <SuppliedValue value={o[c.key]} present={c.key in o} />
                      </td>
                    ))}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <p className="muted small">
        Values, units, reference intervals and flags exactly as the laboratory supplied them: text stays text, nothing is converted or rounded. Rows are marked from the
        laboratory’s own flag (▲ high, ▼ low, ◆ abnormal without a direction, ⚠ critical); — means supplied empty (null), · means not supplied.
      </p>
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
      <FhirPanel orderId={orderId} resultId={version.result_id} version={version.version} allowed={fhir.allowed} />
      <ReportPanel orderId={orderId} resultId={version.result_id} version={version.version} />
    </article>
  );
}

function describeChange(change: Change) {
  switch (change.kind) {
    case 'changed':
      return (
        <>
          <strong>{change.label}</strong> {change.header.toLowerCase()} <del>{suppliedText(change.before)}</del> → <ins>{suppliedText(change.after)}</ins>
        </>
      );
    case 'field_added':
      return (
        <>
          <strong>{change.label}</strong> {change.header.toLowerCase()} added: <ins>{suppliedText(change.after)}</ins>
        </>
      );
    case 'field_removed':
      return (
        <>
          <strong>{change.label}</strong> {change.header.toLowerCase()} removed (was <del>{suppliedText(change.before)}</del>)
        </>
      );
    case 'added':
      return (
        <>
          <strong>{change.label}</strong> added: {observationLine(change.observation)}
        </>
      );
    case 'removed':
      return (
        <>
          <strong>{change.label}</strong> no longer reported (was {observationLine(change.observation)})
        </>
      );
  }
}

function WhatChanged({ from, to }: { from: Version; to: Version }) {
  const changes = diffObservations(from.observations as Observation[], to.observations as Observation[]);
  return (
    <section className="what-changed" aria-label={`What changed from v${from.version} to v${to.version}`}>
      <h4 className="h-small">
        What changed from v{from.version} to v{to.version}
      </h4>
      {changes.length === 0 ? (
        <p className="muted small">The observations are the same as in v{from.version}.</p>
      ) : (
        <ul>
          {changes.map((c, i) => (
            <li key={i}>{describeChange(c)}</li>
          ))}
        </ul>
      )}
      {from.is_critical !== to.is_critical && <p className="small">{to.is_critical ? 'This version is flagged critical.' : `v${from.version} was flagged critical; this version is not.`}</p>}
    </section>
  );
}

/** Strings are shown as they are (“<10” stays “<10”, “45.0” stays “45.0”); anything else as its JSON. */
/** ▲ high, ▼ low, ◆ abnormal (the flag gives no direction); ⚠ before the arrow when critical. */
function SeverityMark({ severity, direction }: { severity: 'abnormal' | 'critical'; direction: Direction }) {
  const arrow = direction === 'high' ? '▲' : direction === 'low' ? '▼' : severity === 'critical' ? '' : '◆';
  const words = [severity, direction].filter(Boolean).join(', ');
  return (
    <span className={`severity-mark severity-mark-${severity}`} title={words}>
      {severity === 'critical' ? '⚠' : ''}
      {arrow}
      <span className="visually-hidden"> {words}:</span>{' '}
    </span>
  );
}

function SuppliedValue({ value, present }: { value: unknown; present: boolean }) {
  if (!present) return <span className="muted" aria-label="not supplied">·</span>;
  // A supplied null (e.g. no abnormal flag) is an empty cell, not a "null" chip.
  if (value === null) return <span className="muted" title="supplied as null">—<span className="visually-hidden">empty</span></span>;
  if (typeof value === 'string') return <span className={value.length > 24 ? 'supplied supplied-long' : 'supplied'}>{value}</span>;
  return <code className="supplied">{JSON.stringify(value)}</code>;
}

/**
 * The report document of one version, opened as a partner does it: ask the report endpoint for a
 * retrieval_path, then follow that path with the same key. Nothing is cached: each opening issues
 * a new server-side retrieval record, as each partner request does.
 */
function ReportPanel({ orderId, resultId, version }: { orderId: string; resultId: string; version: number }) {
  const client = useTRPCClient();
  const [documentUrl, setDocumentUrl] = useState<string | null>(null);
  const reportCall = useLatestCall('results.report', inputIs({ orderId, resultId }));
  const documentCall = useLatestCall('results.reportDocument', inputIs({ orderId, resultId }));
  const open = useMutation({
    mutationFn: async () => {
      const report = (await client.results.report.query({ orderId, resultId })).data.report;
      const input = inputFromRestPath('results.reportDocument', report.retrieval_path);
      if (!input) throw new Error(`The retrieval_path ${report.retrieval_path} is not a report document path.`);
      const document = (await client.results.reportDocument.query(input as { orderId: string; resultId: string; retrieval_id: string })).data;
      const bytes = Uint8Array.from(atob(document.content_base64), (c) => c.charCodeAt(0));
      return { retrievalPath: report.retrieval_path, contentType: document.content_type, size: bytes.length, url: URL.createObjectURL(new Blob([bytes], { type: document.content_type })) };
    },
    onSuccess: (opened) => setDocumentUrl(opened.url),
  });
  // The object URL holds the document in memory until released.
  useEffect(() => () => void (documentUrl && URL.revokeObjectURL(documentUrl)), [documentUrl]);
  const notModeled = open.isError && describeError(open.error).code === 'report_not_modeled';

  return (
    <section className="report-panel" aria-label={`Report of version ${version}`}>
      <div className="row">
        <button type="button" className="button secondary small" onClick={() => open.mutate()} disabled={open.isPending}>
          {open.isPending ? 'Opening the report…' : open.isSuccess ? 'Open the report again' : 'Open the report'}
        </button>
        {open.isSuccess && (
          <span className="small">
            <Badge tone="good">available</Badge> {open.data.contentType} · {open.data.size.toLocaleString()} bytes ·{' '}
            <a href={open.data.url} download={`report-v${version}.pdf`}>
              Download
            </a>{' '}
            ·{' '}
            <a href={open.data.url} target="_blank" rel="noreferrer">
              Open in a new tab
            </a>
          </span>
        )}
        {notModeled && <span className="muted small">No report document for this version: the laboratory supplied none, and the API never fabricates one.</span>}
      </div>
      {open.isError && !notModeled && <ErrorNotice error={open.error} title="The report could not be opened." />}
      {open.isSuccess && (
        <p className="muted small">
          Retrieved through <code>{open.data.retrievalPath}</code>: a server-side retrieval record issued to this key for five minutes.
        </p>
      )}
      {reportCall && <Inspector label={`Report request, version ${version}`} call={reportCall} />}
      {documentCall && <Inspector label={`Report document request, version ${version}`} call={documentCall} />}
    </section>
  );
}
