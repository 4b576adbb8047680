import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState } from 'react';
import { useCapability } from '../capabilities';
import { BeforeOrdering } from '../components/BeforeOrdering';
import { Inspector } from '../components/Inspector';
import { Badge, Empty, ErrorNotice, Loading } from '../components/states';
import { setFlash } from '../flash';
import { freshExternalOrderId, humanize, randomId } from '../format';
import { href, navigate } from '../routing';
import { useLatestCall } from '../inspector/call-log';
import { restRequestFor } from '../inspector/rest-routes';
import { useTRPC, useTRPCClient, type CallContext, type Outputs } from '../trpc';

type Fixture = Outputs['sandbox']['orderFixtures']['data'][number];

export function FixturesPage() {
  const trpc = useTRPC();
  const fixtures = useQuery(trpc.sandbox.orderFixtures.queryOptions({}));
  const programs = useQuery(trpc.programs.list.queryOptions({}));
  const programName = (id: string) => programs.data?.data.find((p) => p.program_id === id)?.name;

  return (
    <section className="stack-lg">
      <header className="page-header">
        <h1>Fixtures</h1>
        <p className="lede">
          Request templates for each ordering contract, filled with your granted sandbox tests and a synthetic subject that is already registered. Each card
          shows the exact request it sends (a fresh <code>external_order_id</code> and <code>Idempotency-Key</code>); edit the body first if you like.
        </p>
      </header>
      {fixtures.isPending ? (
        <Loading label="Reading fixtures…" />
      ) : fixtures.isError ? (
        <ErrorNotice error={fixtures.error} onRetry={() => fixtures.refetch()} />
      ) : fixtures.data.data.length === 0 ? (
        <Empty>No fixtures: they exist only in the sandbox.</Empty>
      ) : (
        <div className="grid-2">
          {fixtures.data.data.map((fixture) => (
            <FixtureCard key={fixture.contract} fixture={fixture} programName={fixture.body ? programName(fixture.body.program_id) : undefined} />
          ))}
        </div>
      )}
      <BeforeOrdering />
    </section>
  );
}

/** The request body a fixture card starts from: the fixture with a fresh external_order_id, as the text that will be sent. */
function initialText(fixture: Fixture): string {
  return JSON.stringify({ ...fixture.body, external_order_id: freshExternalOrderId(fixture.contract) }, null, 2);
}

function parseBody(text: string): { body: Record<string, unknown> } | { problem: string } {
  try {
    const body = JSON.parse(text) as unknown;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return { problem: 'The body must be a JSON object.' };
    return { body: body as Record<string, unknown> };
  } catch (error) {
    return { problem: `Not valid JSON: ${(error as Error).message}` };
  }
}

function FixtureCard({ fixture, programName }: { fixture: Fixture; programName: string | undefined }) {
  const client = useTRPCClient();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState(false);
  // What the editor shows is exactly what Create order sends, Idempotency-Key included.
  const [text, setText] = useState(() => (fixture.body ? initialText(fixture) : ''));
  const [idempotencyKey, setIdempotencyKey] = useState(randomId);
  // A double click must not send twice: the second click arrives before React re-renders the disabled button.
  const sending = useRef(false);
  const bodyId = useId();
  const titleId = useId();
  const reasonId = useId();
  const parsed = parseBody(text);
  const can = useCapability('orders.create');
  const lastCall = useLatestCall('orders.create', (call) => call.idempotencyKey === idempotencyKey);

  const create = useMutation({
    mutationFn: async ({ body, key }: { body: Record<string, unknown>; key: string }) => {
      const context: CallContext = { idempotencyKey: key };
      const created = await client.orders.create.mutate(body as Parameters<typeof client.orders.create.mutate>[0], { context });
      return { order: created.data, idempotencyKey: key };
    },
    onSuccess: ({ order, idempotencyKey: key }) => {
      void queryClient.invalidateQueries(trpc.console.orders.pathFilter());
      setFlash(order.order_id, `Order ${order.external_order_id} created from the ${fixture.contract} fixture (Idempotency-Key ${key}).`);
      navigate(href.order(order.order_id));
    },
    onSettled: () => {
      sending.current = false;
    },
  });

  // The refusal appears below the card's fold at 1366×768: bring it into view and give it focus.
  const outcome = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!create.isError || !outcome.current) return;
    outcome.current.scrollIntoView({ block: 'nearest' });
    outcome.current.focus({ preventScroll: true });
  }, [create.isError, create.failureCount, create.submittedAt]);

  const send = () => {
    if (sending.current || !('body' in parsed) || !can.allowed) return;
    sending.current = true;
    create.mutate({ body: parsed.body, key: idempotencyKey });
  };

  const edit = (next: string) => {
    setText(next);
    // A different body is a different intended order: it needs its own key (the same key with another body is refused).
    setIdempotencyKey(randomId());
    create.reset();
  };

  const body = fixture.body;
  const preview = 'body' in parsed ? restRequestFor('orders.create', parsed.body, window.location.origin, { 'Idempotency-Key': idempotencyKey }) : null;
  return (
    <article className="card fixture" aria-labelledby={titleId}>
      <header className="card-header">
        <h2 id={titleId}>{humanize(fixture.contract)}</h2>
        {fixture.available ? <Badge tone="good">available</Badge> : <Badge>not available</Badge>}
      </header>
      <p>{fixture.description}</p>
      {!body ? (
        <p className="muted">{fixture.unavailable_reason ?? 'None of your granted sandbox tests needs this contract.'}</p>
      ) : (
        <>
          <dl className="facts compact-facts">
            <dt>Program</dt>
            <dd>{programName ?? <code>{body.program_id}</code>}</dd>
            <dt>Collection</dt>
            <dd>
              {humanize(body.collection)}
              {body.region ? ` · ${body.region}` : ''}
            </dd>
            <dt>Subject</dt>
            <dd>
              <code>{body.external_subject_id}</code>
            </dd>
            <dt>Also sends</dt>
            <dd>
              {[body.patient && 'patient', body.ordering_provider && 'ordering provider', body.aoe_answers && `${body.aoe_answers.length} AOE answers`, body.billing_mode && 'billing mode']
                .filter(Boolean)
                .join(', ') || 'nothing else'}
            </dd>
          </dl>
          <div className="row">
            <button
              type="button"
              className="button"
              onClick={send}
              disabled={create.isPending || !('body' in parsed) || !can.allowed}
              aria-describedby={can.allowed ? undefined : reasonId}
            >
              {create.isPending ? 'Creating…' : 'Create order'}
            </button>
            <button type="button" className="button ghost" aria-expanded={editing} aria-controls={bodyId} onClick={() => setEditing(!editing)}>
              {editing ? 'Hide' : 'Edit'} request body
            </button>
          </div>
          {!can.allowed && (
            <p id={reasonId} className="note note-warn small reason">
              {can.reason}
            </p>
          )}
          {editing && (
            <div className="stack">
              <label htmlFor={bodyId}>Request body (sent exactly as shown)</label>
              <textarea
                id={bodyId}
                className="json-editor"
                spellCheck={false}
                value={text}
                rows={Math.min(24, text.split('\n').length + 1)}
                onChange={(e) => edit(e.target.value)}
                aria-invalid={'problem' in parsed ? true : undefined}
              />
              {'problem' in parsed && (
                <p className="form-error" role="alert">
                  {parsed.problem}
                </p>
              )}
              <div className="row">
                <button type="button" className="button ghost small" onClick={() => edit(initialText(fixture))}>
                  Reset to the fixture (new external_order_id)
                </button>
              </div>
            </div>
          )}
          {create.isError && (
            <div ref={outcome} tabIndex={-1} className="focus-target">
              <ErrorNotice error={create.error} title="The order was not created." />
            </div>
          )}
          <Inspector label={`Create order request, ${fixture.contract} fixture`} call={lastCall} preview={preview} />
        </>
      )}
    </article>
  );
}
