import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState } from 'react';
import { LIFECYCLE_DETAILS } from '@lop/contract';
import { useCapability } from '../capabilities';
import { humanize } from '../format';
import { inputIs, useLatestCall } from '../inspector/call-log';
import { useTRPC, type Outputs } from '../trpc';
import { Inspector } from './Inspector';
import { Badge, ErrorNotice, Loading } from './states';

type OrderScenarios = Outputs['console']['orderScenarios']['data'];
type Scenario = OrderScenarios['scenarios'][number];
type Simulation = Outputs['sandbox']['simulate']['data'];

/** The server's progress in one string: a change anywhere (state or any scenario's steps) changes it. */
function signature(data: OrderScenarios | undefined): string | null {
  return data ? `${data.lifecycle_detail}|${data.scenarios.map((s) => s.steps_applied).join(',')}` : null;
}

/** The scenario a reader most likely wants: the one in progress here, else the first that can start. */
function preferred(scenarios: Scenario[]): Scenario | undefined {
  const inProgress = scenarios.filter((s) => s.available && s.status === 'in_progress').sort((a, b) => (b.last_applied_at ?? '').localeCompare(a.last_applied_at ?? ''));
  return inProgress[0] ?? scenarios.find((s) => s.available) ?? [...scenarios].filter((s) => s.status !== 'not_started').sort((a, b) => (b.last_applied_at ?? '').localeCompare(a.last_applied_at ?? ''))[0];
}

/**
 * Why no scenario is offered on an order none has run on: every scenario starts from a newly created
 * order, so an order moved on by other means (cancelled, or by the laboratory) has none to run.
 */
export function noScenarioReason(detail: string): string {
  const lifecycle = (LIFECYCLE_DETAILS as Record<string, { lifecycle: string } | undefined>)[detail]?.lifecycle;
  const final = lifecycle === 'cancelled' || lifecycle === 'completed' || lifecycle === 'failed';
  return (
    (final ? `This order is ${humanize(detail)}, a final state: no scenario can move it any further.` : `No scenario can run from this order's state, ${humanize(detail)}.`) +
    ' Every scenario starts from a newly created order (received): create one from a fixture to run a scenario.'
  );
}

/** Whether any scenario's next step can run on the order now (the order page's hints follow it). */
export function useScenarioOffered(orderId: string): boolean | undefined {
  const trpc = useTRPC();
  const canRead = useCapability('console.orderScenarios');
  // The same query (and cache entry) as the panel: it costs no extra request.
  const progress = useQuery({ ...trpc.console.orderScenarios.queryOptions({ orderId }), enabled: canRead.allowed && canRead.known });
  return progress.data?.data.scenarios.some((s) => s.available);
}

/**
 * Runs sandbox scenarios on the order from the server's state: the steps already applied (by this
 * tab, another tab or the partner's own code) come from console.orderScenarios, and only scenarios
 * whose next step can run from the order's state are offered.
 */
export function ScenarioPanel({ orderId }: { orderId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const canRead = useCapability('console.orderScenarios');
  const can = useCapability('sandbox.simulate');
  const progress = useQuery({ ...trpc.console.orderScenarios.queryOptions({ orderId }), enabled: canRead.allowed && canRead.known });
  const [chosen, setChosen] = useState<string | null>(null);
  const [last, setLast] = useState<Simulation | null>(null);
  // When the last success arrived, and the server's progress when the last refusal arrived: the
  // progress read after them decides whether their banners still hold.
  const [outcomeAt, setOutcomeAt] = useState(0);
  const [refusedAt, setRefusedAt] = useState<string | null>(null);
  const lastCall = useLatestCall('sandbox.simulate', inputIs({ orderId }));
  const selectId = useId();
  const reasonId = useId();
  // While a step runs the buttons refuse clicks but keep focus: a disabled button would drop it to <body>.
  const running = useRef(false);

  const simulate = useMutation(
    trpc.sandbox.simulate.mutationOptions({
      onSuccess: (result) => {
        setLast(result.data);
        setOutcomeAt(Date.now());
        void queryClient.invalidateQueries(trpc.orders.get.queryFilter({ orderId }));
        void queryClient.invalidateQueries(trpc.results.list.queryFilter({ orderId }));
        void queryClient.invalidateQueries(trpc.orders.exceptions.queryFilter({ orderId }));
        void queryClient.invalidateQueries(trpc.console.orders.pathFilter());
      },
      onError: () => setRefusedAt(signature(queryClient.getQueryData(trpc.console.orderScenarios.queryKey({ orderId }))?.data)),
      onSettled: async () => {
        await queryClient.invalidateQueries(trpc.console.orderScenarios.queryFilter({ orderId }));
        running.current = false;
      },
    }),
  );

  const scenarios = progress.data?.data.scenarios ?? [];
  const offered = scenarios.filter((s) => s.available);
  const fallback = preferred(scenarios);
  const scenario = scenarios.find((s) => s.scenario === chosen) ?? fallback;
  const completed = scenario?.steps_applied ?? 0;

  // A banner describes one moment: once the server's progress moves on (another tab, a partner's own
  // call), the success banner and any refusal are stale and go.
  const staleSuccess = last !== null && outcomeAt > 0 && progress.dataUpdatedAt > outcomeAt && (last.scenario !== scenario?.scenario || last.steps_completed !== completed);
  const staleRefusal = simulate.isError && refusedAt !== null && signature(progress.data?.data) !== refusedAt;
  const stale = staleSuccess || staleRefusal;
  const { reset } = simulate;
  useEffect(() => {
    if (stale) {
      setLast(null);
      setOutcomeAt(0);
      setRefusedAt(null);
      reset();
    }
  }, [stale, reset]);

  if (!canRead.allowed) return <p className="note note-warn reason">{canRead.reason}</p>;
  if (progress.isPending) return <Loading label="Reading where this order stands in each scenario…" />;
  if (progress.isError) return <ErrorNotice error={progress.error} onRetry={() => progress.refetch()} />;
  if (!scenario) return <p className="note">{noScenarioReason(progress.data.data.lifecycle_detail)}</p>;

  const blocked = simulate.isPending || !scenario.available || !can.allowed;
  const run = (steps?: number) => {
    if (running.current || blocked) return;
    running.current = true;
    setLast(null);
    simulate.mutate({ orderId, scenario: scenario.scenario as Parameters<typeof simulate.mutate>[0]['scenario'], ...(steps ? { steps } : {}) });
  };
  const notOffered = scenarios.filter((s) => !s.available);

  return (
    <div className="stack">
      <div className="field-inline">
        <label htmlFor={selectId}>Scenario</label>
        <select
          id={selectId}
          value={scenario.scenario}
          onChange={(e) => {
            setChosen(e.target.value);
            setLast(null);
            simulate.reset();
          }}
        >
          {offered.map((s) => (
            <option key={s.scenario} value={s.scenario}>
              {s.scenario}
              {s.status === 'in_progress' ? ` (${s.steps_applied} of ${s.steps} done)` : ''}
            </option>
          ))}
          {!scenario.available && (
            <option value={scenario.scenario}>
              {scenario.scenario} ({scenario.status === 'completed' ? 'completed' : 'cannot continue'})
            </option>
          )}
        </select>
      </div>
      <p>{scenario.description}</p>

      <div className="scenario-controls" role="group" aria-label="Run the scenario">
        <div className="row">
          <button
            type="button"
            className="button"
            onClick={() => run(1)}
            aria-disabled={blocked || undefined}
            aria-describedby={!can.allowed ? reasonId : undefined}
            aria-busy={simulate.isPending || undefined}
          >
            {simulate.isPending ? 'Running…' : completed > 0 ? 'Run next step' : 'Run first step'}
          </button>
          <button
            type="button"
            className="button secondary"
            onClick={() => run()}
            aria-disabled={blocked || undefined}
            aria-describedby={!can.allowed ? reasonId : undefined}
          >
            {completed > 0 ? 'Run remaining steps' : 'Run whole scenario'}
          </button>
          <span className="muted small" aria-live="polite">
            {completed} of {scenario.steps} steps done
          </span>
        </div>
        {!can.allowed && (
          <p id={reasonId} className="note note-warn small reason">
            {can.reason}
          </p>
        )}
        {simulate.isError && <ErrorNotice error={simulate.error} title="The simulation did not run." />}
        {last && !stale && (
          <div className="note note-good" role="status">
            <p>
              <strong>
                Applied {last.steps_applied} step{last.steps_applied === 1 ? '' : 's'}
              </strong>{' '}
              ({last.applied_steps.map((s) => humanize(s.name)).join(', ')}) · {last.events_emitted} event{last.events_emitted === 1 ? '' : 's'} emitted
              {last.event_types.length > 0 && (
                <>
                  : {last.event_types.map((t, i) => (
                    <Badge key={i}>{t}</Badge>
                  ))}
                </>
              )}
            </p>
            <p className="muted small">
              Order is now <code>{last.lifecycle}</code> / <code>{last.lifecycle_detail}</code>, next action <code>{last.next_action}</code>.
            </p>
          </div>
        )}
      </div>

      {scenario.status === 'completed' ? (
        <p className="note">Every step of this scenario has run on this order. Create a new order from a fixture to run it again.</p>
      ) : (
        !scenario.available && scenario.refusal && <p className="note note-warn">{scenario.refusal}</p>
      )}

      <ol className="steps" aria-label={`Steps of ${scenario.scenario}`}>
        {scenario.step_details.map((s) => {
          const state = s.applied ? 'done' : s.step === completed + 1 ? 'next' : 'todo';
          return (
            <li key={s.step} className={`step step-${state}`} aria-current={state === 'next' ? 'step' : undefined}>
              <span className="step-marker" aria-hidden="true">
                {state === 'done' ? '✓' : s.step}
              </span>
              <span className="step-body">
                <span className="step-name">
                  {humanize(s.name)} <span className="step-leads-to">→ {humanize(s.leads_to)}</span>
                  {state === 'done' && <span className="visually-hidden"> (done)</span>}
                  {state === 'next' && <span className="visually-hidden"> (next)</span>}
                </span>
                <span className="muted small">{s.description}</span>
                {s.events.length > 0 && (
                  <span className="step-events">
                    {s.events.map((e, i) => (
                      <code key={i}>{e}</code>
                    ))}
                  </span>
                )}
              </span>
            </li>
          );
        })}
      </ol>
      {notOffered.length > 0 && (
        <details className="small">
          <summary>
            {notOffered.length} scenario{notOffered.length === 1 ? '' : 's'} not offered from <code>{progress.data.data.lifecycle_detail}</code>
          </summary>
          <ul>
            {notOffered.map((s) => (
              <li key={s.scenario}>
                <code>{s.scenario}</code>: {s.status === 'completed' ? 'completed on this order' : s.refusal}
              </li>
            ))}
          </ul>
        </details>
      )}
      <Inspector label="Simulate request" call={lastCall} />
    </div>
  );
}
