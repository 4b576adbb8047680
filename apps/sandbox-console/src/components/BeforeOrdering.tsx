import { useMutation, useQuery } from '@tanstack/react-query';
import { useId, useState, type ReactNode } from 'react';
import { useCapability } from '../capabilities';
import { humanize } from '../format';
import { inputIs, useLatestCall } from '../inspector/call-log';
import { useTRPC } from '../trpc';
import { Inspector } from './Inspector';
import { Badge, Empty, ErrorNotice, Loading } from './states';

/**
 * The partner reads before an order, next to the fixtures: the catalog, the requirements profile
 * (what create enforces, e.g. billing_mode and its accepted values), serviceability, locations and
 * subject registration. Each goes through the same procedures as REST and shows in the inspector.
 */
export function BeforeOrdering() {
  const trpc = useTRPC();
  const canPrograms = useCapability('programs.list');
  const programs = useQuery({ ...trpc.programs.list.queryOptions({}), enabled: canPrograms.allowed });
  const [programId, setProgramId] = useState<string>('');
  const [itemId, setItemId] = useState<string>('');
  const [region, setRegion] = useState('');
  const programSelect = useId();
  const itemSelect = useId();
  const regionInput = useId();

  const program = programId || programs.data?.data[0]?.program_id || '';
  const canCatalog = useCapability('programs.catalog');
  const catalog = useQuery({ ...trpc.programs.catalog.queryOptions({ programId: program }), enabled: Boolean(program) && canCatalog.allowed });
  const item = catalog.data?.data.find((i) => i.item_id === itemId) ? itemId : '';

  return (
    <section className="stack-lg" aria-labelledby="before-ordering-title">
      <header>
        <h2 id="before-ordering-title">Before ordering</h2>
        <p className="muted">
          What a partner reads before it creates an order: the program&apos;s catalog, the requirements profile that create enforces, serviceability, collection
          locations, and registering a subject reference.
        </p>
      </header>
      {!canPrograms.allowed ? (
        <p className="note note-warn reason">{canPrograms.reason}</p>
      ) : programs.isPending ? (
        <Loading label="Reading programs…" />
      ) : programs.isError ? (
        <ErrorNotice error={programs.error} onRetry={() => programs.refetch()} />
      ) : programs.data.data.length === 0 ? (
        <Empty>No program is granted to this client in the sandbox.</Empty>
      ) : (
        <>
          <div className="row choose-program">
            <div className="field">
              <label htmlFor={programSelect}>Program</label>
              <select
                id={programSelect}
                value={program}
                onChange={(e) => {
                  setProgramId(e.target.value);
                  setItemId('');
                }}
              >
                {programs.data.data.map((p) => (
                  <option key={p.program_id} value={p.program_id}>
                    {p.name}
                  </option>
                ))}
              </select>
            </div>
            <div className="field">
              <label htmlFor={itemSelect}>Test</label>
              <select id={itemSelect} value={item} onChange={(e) => setItemId(e.target.value)}>
                <option value="">Every test of the program</option>
                {catalog.data?.data.map((i) => (
                  <option key={i.item_id} value={i.item_id}>
                    {i.name}
                  </option>
                ))}
              </select>
            </div>
            <div className="field">
              <label htmlFor={regionInput}>Region (optional)</label>
              <input id={regionInput} value={region} maxLength={80} placeholder="e.g. US-CA" onChange={(e) => setRegion(e.target.value.trim())} />
            </div>
          </div>
          <div className="grid-2">
            <article className="card" aria-labelledby="requirements-title">
              <h3 id="requirements-title">Requirements profile</h3>
              <Requirements programId={program} itemId={item || undefined} region={region || undefined} />
            </article>
            <article className="card" aria-labelledby="serviceability-title">
              <h3 id="serviceability-title">Serviceability</h3>
              <ServiceabilityCheck programId={program} itemId={item || catalog.data?.data[0]?.item_id || ''} region={region || undefined} />
            </article>
          </div>
          <article className="card" aria-labelledby="catalog-title">
            <h3 id="catalog-title">Catalog</h3>
            {!canCatalog.allowed ? (
              <p className="note note-warn small reason">{canCatalog.reason}</p>
            ) : catalog.isPending ? (
              <Loading label="Reading the catalog…" />
            ) : catalog.isError ? (
              <ErrorNotice error={catalog.error} onRetry={() => catalog.refetch()} />
            ) : (
              <div className="table-wrap" tabIndex={0} role="region" aria-label="Catalog">
                <table className="compact">
                  <thead>
                    <tr>
                      <th scope="col">Test</th>
                      <th scope="col">Code</th>
                      <th scope="col">Specimen</th>
                      <th scope="col">item_id</th>
                    </tr>
                  </thead>
                  <tbody>
                    {catalog.data.data.map((i) => (
                      <tr key={i.item_id}>
                        <td>
                          {i.name} <span className="muted small">({i.kind})</span>
                        </td>
                        <td>
                          <code>{i.code}</code>
                        </td>
                        <td>
                          {humanize(i.specimen_type)} · {i.container}
                        </td>
                        <td>
                          <code>{i.item_id}</code>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <CallInspector label="Catalog request" path="programs.catalog" match={{ programId: program }} />
          </article>
        </>
      )}
      <div className="grid-2">
        <article className="card" aria-labelledby="locations-title">
          <h3 id="locations-title">Collection locations</h3>
          <Locations />
        </article>
        <article className="card" aria-labelledby="subject-title">
          <h3 id="subject-title">Register a subject</h3>
          <SubjectForm />
        </article>
      </div>
    </section>
  );
}

function CallInspector({ label, path, match }: { label: string; path: string; match?: Record<string, unknown> }) {
  const call = useLatestCall(path, match ? inputIs(match) : undefined);
  return <Inspector label={label} call={call} />;
}

const list = (values: string[]) => (values.length === 0 ? <span className="muted">none</span> : values.map((v) => <code key={v}>{v}</code>).reduce<ReactNode[]>((a, c, i) => (i ? [...a, ' ', c] : [c]), []));

function Requirements({ programId, itemId, region }: { programId: string; itemId?: string; region?: string }) {
  const trpc = useTRPC();
  const can = useCapability('programs.requirements');
  const input = { programId, ...(itemId ? { item_id: itemId } : {}), ...(region ? { region } : {}) };
  const profile = useQuery({ ...trpc.programs.requirements.queryOptions(input), enabled: Boolean(programId) && can.allowed });
  const call = useLatestCall('programs.requirements', (c) => JSON.stringify(c.input) === JSON.stringify(input));
  if (!can.allowed) return <p className="note note-warn small reason">{can.reason}</p>;
  return (
    <div className="stack">
      {profile.isPending ? (
        <Loading label="Reading the requirements profile…" />
      ) : profile.isError ? (
        <ErrorNotice error={profile.error} onRetry={() => profile.refetch()} />
      ) : (
        <dl className="facts compact-facts">
          <dt>Billing mode</dt>
          <dd>
            {profile.data.data.billing.mode_required ? <Badge tone="warn">required</Badge> : <Badge>optional</Badge>} accepted:{' '}
            {profile.data.data.billing.accepted_modes.length === 0 ? <span className="muted">any value</span> : list(profile.data.data.billing.accepted_modes)}
          </dd>
          <dt>Patient fields</dt>
          <dd>{list(profile.data.data.subject.required_patient_fields)}</dd>
          <dt>Order fields</dt>
          <dd>{list(profile.data.data.order.required_fields)}</dd>
          <dt>Ordering provider</dt>
          <dd>
            {humanize(profile.data.data.provider.requirement)}
            {profile.data.data.provider.required_fields.length > 0 && <> · {list(profile.data.data.provider.required_fields)}</>}
          </dd>
          <dt>AOE questions</dt>
          <dd>
            {profile.data.data.aoe.questions.length === 0
              ? 'none'
              : profile.data.data.aoe.questions.map((q) => (
                  <div key={q.question_key} className="small">
                    <code>{q.question_key}</code> {q.prompt} {q.required && <Badge tone="warn">required</Badge>}
                  </div>
                ))}
          </dd>
          <dt>Collection</dt>
          <dd>
            {list(profile.data.data.collection.methods)} in {list(profile.data.data.collection.regions)}
          </dd>
          <dt>Clinical</dt>
          <dd>
            {humanize(profile.data.data.clinical.policy)} · {humanize(profile.data.data.clinical.ordering_model)}
          </dd>
        </dl>
      )}
      <Inspector label="Requirements request" call={call} />
    </div>
  );
}

function ServiceabilityCheck({ programId, itemId, region }: { programId: string; itemId: string; region?: string }) {
  const trpc = useTRPC();
  const can = useCapability('serviceability.check');
  const [collection, setCollection] = useState('');
  const collectionInput = useId();
  const check = useMutation(trpc.serviceability.check.mutationOptions());
  const call = useLatestCall('serviceability.check');
  if (!can.allowed) return <p className="note note-warn small reason">{can.reason}</p>;
  return (
    <div className="stack">
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          check.mutate({ program_id: programId, item_id: itemId, ...(region ? { region } : {}), ...(collection ? { collection } : {}) });
        }}
      >
        <div className="field">
          <label htmlFor={collectionInput}>Collection (optional)</label>
          <input id={collectionInput} value={collection} maxLength={40} placeholder="e.g. in_person_draw" onChange={(e) => setCollection(e.target.value.trim())} />
        </div>
        <button type="submit" className="button" disabled={check.isPending || !itemId}>
          {check.isPending ? 'Checking…' : 'Check serviceability'}
        </button>
      </form>
      <p className="muted small">Checks the program, test and region chosen above.</p>
      {check.isSuccess && (
        <p className={`note ${check.data.data.serviceable ? 'note-good' : 'note-warn'}`} role="status">
          {check.data.data.serviceable ? (
            <strong>Serviceable.</strong>
          ) : (
            <>
              <strong>Not serviceable:</strong> {list(check.data.data.reasons)}
            </>
          )}
        </p>
      )}
      {check.isError && <ErrorNotice error={check.error} title="The check was refused." />}
      <Inspector label="Serviceability request" call={call} />
    </div>
  );
}

function Locations() {
  const trpc = useTRPC();
  const can = useCapability('locations.list');
  const locations = useQuery({ ...trpc.locations.list.queryOptions({}), enabled: can.allowed });
  const call = useLatestCall('locations.list');
  if (!can.allowed) return <p className="note note-warn small reason">{can.reason}</p>;
  return (
    <div className="stack">
      {locations.isPending ? (
        <Loading label="Reading locations…" />
      ) : locations.isError ? (
        <ErrorNotice error={locations.error} onRetry={() => locations.refetch()} />
      ) : locations.data.data.length === 0 ? (
        <Empty>No active location serves your granted programs.</Empty>
      ) : (
        <ul className="plain-list">
          {locations.data.data.map((l) => (
            <li key={l.location_id}>
              <strong>{l.name}</strong> <code>{l.location_code}</code>
              <div className="muted small">
                {l.city}, {l.region}, {l.country} · {l.collection_methods.map(humanize).join(', ')}
                {l.appointment_required ? ' · appointment required' : ''}
                {l.walk_in_allowed ? ' · walk-ins' : ''}
              </div>
            </li>
          ))}
        </ul>
      )}
      <Inspector label="Locations request" call={call} />
    </div>
  );
}

function SubjectForm() {
  const trpc = useTRPC();
  const can = useCapability('subjects.put');
  const [subject, setSubject] = useState('');
  const subjectInput = useId();
  const put = useMutation(trpc.subjects.put.mutationOptions());
  const call = useLatestCall('subjects.put');
  if (!can.allowed) return <p className="note note-warn small reason">{can.reason}</p>;
  return (
    <div className="stack">
      <p className="muted small">
        Your own opaque reference for a person (never a name or date of birth). Orders name it in <code>external_subject_id</code>; repeating the call changes
        nothing.
      </p>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          put.mutate({ externalSubjectId: subject });
        }}
      >
        <div className="field">
          <label htmlFor={subjectInput}>external_subject_id</label>
          <input id={subjectInput} value={subject} onChange={(e) => setSubject(e.target.value)} placeholder="e.g. subj-0001" />
        </div>
        <button type="submit" className="button" disabled={put.isPending || subject === ''}>
          {put.isPending ? 'Registering…' : 'Register subject'}
        </button>
      </form>
      {put.isSuccess && (
        <p className="note note-good" role="status">
          Linked <code>{put.data.data.external_subject_id}</code>.
        </p>
      )}
      {put.isError && <ErrorNotice error={put.error} title="The subject was not registered." />}
      <Inspector label="Register subject request" call={call} />
    </div>
  );
}
