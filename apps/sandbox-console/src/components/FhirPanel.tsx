import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { inputIs, useLatestCall } from '../inspector/call-log';
import { useTRPC, type Outputs } from '../trpc';
import { CopyButton } from './CopyButton';
import { Inspector } from './Inspector';
import { Badge, ErrorNotice, Loading } from './states';

type Bundle = Outputs['results']['fhir'];

/** "DiagnosticReport final · 5 Observations · Specimen": what the bundle holds, in one line. */
export function bundleSummary(bundle: Bundle): string {
  const report = bundle.entry.find((e) => e.resource.resourceType === 'DiagnosticReport')?.resource as { status?: string } | undefined;
  const observations = bundle.entry.filter((e) => e.resource.resourceType === 'Observation').length;
  const specimen = bundle.entry.some((e) => e.resource.resourceType === 'Specimen');
  return [`DiagnosticReport ${report?.status ?? ''}`.trim(), `${observations} Observation${observations === 1 ? '' : 's'}`, ...(specimen ? ['Specimen'] : [])].join(' · ');
}

/**
 * The FHIR R4 view of one released version (GET …/results/{resultId}/fhir), read only when asked
 * for, with the partner request beside it in the inspector.
 */
export function FhirPanel({ orderId, resultId, version, allowed }: { orderId: string; resultId: string; version: number; allowed: boolean }) {
  const trpc = useTRPC();
  const [shown, setShown] = useState(false);
  const panelId = useId();
  const bundle = useQuery({ ...trpc.results.fhir.queryOptions({ orderId, resultId }), enabled: shown && allowed });
  const call = useLatestCall('results.fhir', inputIs({ orderId, resultId }));
  if (!allowed) return null;
  return (
    <section className="fhir-panel" aria-label={`FHIR view of version ${version}`}>
      <div className="row">
        <button type="button" className="button ghost small" aria-expanded={shown} aria-controls={panelId} onClick={() => setShown(!shown)}>
          {shown ? 'Hide' : 'Show'} FHIR R4
        </button>
        {shown && bundle.isSuccess && (
          <>
            <span className="small">
              <Badge tone="info">Bundle</Badge> {bundleSummary(bundle.data)}
            </span>
            <CopyButton text={JSON.stringify(bundle.data, null, 2)} label="Copy FHIR JSON" />
          </>
        )}
      </div>
      {shown && (
        <div id={panelId} className="stack">
          {bundle.isPending && <Loading label="Reading the FHIR view…" />}
          {bundle.isError && <ErrorNotice error={bundle.error} onRetry={() => bundle.refetch()} />}
          {bundle.isSuccess && (
            <>
              <p className="muted small">
                The same released version as FHIR R4 (<code>application/fhir+json; fhirVersion=4.0</code>): a plain decimal as <code>valueQuantity</code>, anything
                else as <code>valueString</code>, codes in the laboratory’s own code system (never LOINC), the subject as your <code>external_subject_id</code> only. Shown
                here as the browser parsed it, so a quantity’s trailing zeros (<code>1.50</code>) read <code>1.5</code>; the API’s own bytes keep the supplied
                digits (the request below, as curl).
              </p>
              <pre className="json" tabIndex={0} aria-label={`FHIR Bundle of version ${version}`}>
                {JSON.stringify(bundle.data, null, 2)}
              </pre>
            </>
          )}
          {call && <Inspector label={`FHIR request, version ${version}`} call={call} />}
        </div>
      )}
    </section>
  );
}
