import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { useCapability } from '../capabilities';
import { humanize } from '../format';
import { inputIs, useLatestCall } from '../inspector/call-log';
import { useTRPC, type Outputs } from '../trpc';
import { Inspector } from './Inspector';
import { Badge, ErrorNotice, Loading } from './states';

type Scenario = Outputs['sandbox']['scenarios']['data'][number];
type Simulation = Outputs['sandbox']['simulate']['data'];

interface Progress {
  scenario: string;
  completed: number;
}

/** What this tab knows of the order's progress through a scenario (the server keeps the truth). */
const progressKey = (orderId: string) => `lop.sandbox-console.progress.${orderId}`;
function readProgress(orderId: string): Progress | null {
  try {
    const raw = sessionStorage.getItem(progressKey(orderId));
    return raw ? (JSON.parse(raw) as Progress) : null;
  } catch {
    return null;
  }
}

export function ScenarioPanel({ orderId }: { orderId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const scenarios = useQuery(trpc.sandbox.scenarios.queryOptions({}));
  const [progress, setProgress] = useState<Progress | null>(() => readProgress(orderId));
  const [chosen, setChosen] = useState<string>(() => progress?.scenario ?? '');
  const [last, setLast] = useState<Simulation | null>(null);
  const lastCall = useLatestCall('sandbox.simulate', inputIs({ orderId }));
  const can = useCapability('sandbox.simulate');
  const reasonId = useId();
  const selectId = useId();
  const stepsId = useId();

  const simulate = useMutation(
    trpc.sandbox.simulate.mutationOptions({
      onSuccess: (result) => {
        const next = { scenario: result.data.scenario, completed: result.data.steps_completed };
        sessionStorage.setItem(progressKey(orderId), JSON.stringify(next));
        setProgress(next);
        setLast(result.data);
        void queryClient.invalidateQueries(trpc.orders.get.queryFilter({ orderId }));
        void queryClient.invalidateQueries(trpc.results.list.queryFilter({ orderId }));
        void queryClient.invalidateQueries(trpc.orders.exceptions.queryFilter({ orderId }));
        void queryClient.invalidateQueries(trpc.console.orders.pathFilter());
      },
    }),
  );

  if (scenarios.isPending) return <Loading label="Reading scenarios…" />;
  if (scenarios.isError) return <ErrorNotice error={scenarios.error} onRetry={() => scenarios.refetch()} />;

  const selectedName = chosen || scenarios.data.data[0]?.scenario || '';
  const scenario: Scenario | undefined = scenarios.data.data.find((s) => s.scenario === selectedName);
  const completed = progress && progress.scenario === selectedName ? progress.completed : null;
  const finished = scenario !== undefined && completed !== null && completed >= scenario.steps;
  const run = (steps?: number) => scenario && simulate.mutate({ orderId, scenario: scenario.scenario, ...(steps ? { steps } : {}) });

  return (
    <div className="stack">
      <div className="field-inline">
        <label htmlFor={selectId}>Scenario</label>
        <select
          id={selectId}
          value={selectedName}
          onChange={(e) => {
            setChosen(e.target.value);
            setLast(null);
            simulate.reset();
          }}
        >
          {scenarios.data.data.map((s) => (
            <option key={s.scenario} value={s.scenario}>
              {s.scenario}
            </option>
          ))}
        </select>
      </div>
      {scenario && (
        <>
          <p>{scenario.description}</p>
          <ol className="steps" id={stepsId} aria-label={`Steps of ${scenario.scenario}`}>
            {scenario.step_details.map((s) => {
              const state = completed === null ? 'unknown' : s.step <= completed ? 'done' : s.step === completed + 1 ? 'next' : 'todo';
              return (
                <li key={s.step} className={`step step-${state}`} aria-current={state === 'next' ? 'step' : undefined}>
                  <span className="step-marker" aria-hidden="true">
                    {state === 'done' ? '✓' : s.step}
                  </span>
                  <span className="step-body">
                    <span className="step-name">
                      {humanize(s.name)}
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
          <p className="muted small">
            Ends in <code>{scenario.ends_in}</code> · emits {scenario.events.length} events on a new order.
          </p>
          <div className="row">
            <button type="button" className="button" onClick={() => run(1)} disabled={simulate.isPending || finished || !can.allowed} aria-describedby={can.allowed ? undefined : reasonId}>
              {simulate.isPending ? 'Running…' : completed ? 'Run next step' : 'Run first step'}
            </button>
            <button type="button" className="button secondary" onClick={() => run()} disabled={simulate.isPending || finished || !can.allowed} aria-describedby={can.allowed ? undefined : reasonId}>
              {completed ? 'Run remaining steps' : 'Run whole scenario'}
            </button>
            {completed !== null && (
              <span className="muted small" aria-live="polite">
                {completed} of {scenario.steps} steps done
              </span>
            )}
          </div>
          {!can.allowed && (
            <p id={reasonId} className="note note-warn small reason">
              {can.reason}
            </p>
          )}
          {finished && <p className="note">Every step of this scenario has run on this order. Create a new order from a fixture to run it again.</p>}
        </>
      )}
      {simulate.isError && <ErrorNotice error={simulate.error} title="The simulation did not run." />}
      <Inspector label="Simulate request" call={lastCall} />
      {last && (
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
  );
}
