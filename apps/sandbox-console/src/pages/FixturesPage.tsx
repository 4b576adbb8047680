import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { Badge, Empty, ErrorNotice, Loading } from '../components/states';
import { setFlash } from '../flash';
import { freshExternalOrderId, humanize, randomId } from '../format';
import { href, navigate } from '../routing';
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
          Request templates for each ordering contract, filled with your granted sandbox tests and a synthetic subject that is already registered. Create an order
          in one click: the console sets a fresh <code>external_order_id</code> and <code>Idempotency-Key</code>.
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
    </section>
  );
}

function FixtureCard({ fixture, programName }: { fixture: Fixture; programName: string | undefined }) {
  const client = useTRPCClient();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [showBody, setShowBody] = useState(false);
  const bodyId = useId();
  const titleId = useId();

  const create = useMutation({
    mutationFn: async (body: NonNullable<Fixture['body']>) => {
      const idempotencyKey = randomId();
      const externalOrderId = freshExternalOrderId(fixture.contract);
      const context: CallContext = { idempotencyKey };
      const created = await client.orders.create.mutate({ ...body, external_order_id: externalOrderId }, { context });
      return { order: created.data, idempotencyKey };
    },
    onSuccess: ({ order, idempotencyKey }) => {
      void queryClient.invalidateQueries(trpc.console.orders.pathFilter());
      setFlash(
        order.order_id,
        `Order ${order.external_order_id} created from the ${fixture.contract} fixture (Idempotency-Key ${idempotencyKey}). Run a scenario to move it along.`,
      );
      navigate(href.order(order.order_id));
    },
  });

  const body = fixture.body;
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
            <button type="button" className="button" onClick={() => create.mutate(body)} disabled={create.isPending}>
              {create.isPending ? 'Creating…' : 'Create order'}
            </button>
            <button type="button" className="button ghost" aria-expanded={showBody} aria-controls={bodyId} onClick={() => setShowBody(!showBody)}>
              {showBody ? 'Hide' : 'Show'} request body
            </button>
          </div>
          {create.isError && <ErrorNotice error={create.error} title="The order was not created." />}
          {showBody && (
            <pre id={bodyId} className="json" tabIndex={0}>
              {JSON.stringify(body, null, 2)}
            </pre>
          )}
        </>
      )}
    </article>
  );
}
