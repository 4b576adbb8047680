import { useQuery } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState } from 'react';
import { formatTime } from '../format';
import { href } from '../routing';
import { isFinal, type Outputs, useTRPC } from '../trpc';
import { Badge, ErrorNotice, Loading } from './states';

type Health = Outputs['console']['webhooks']['health']['data'];
type Bucket = Health['buckets'][number];

/** "14:00–15:00" in the reader's own clock. */
function hourLabel(b: Pick<Bucket, 'start' | 'end'>): string {
  const clock = (iso: string) => new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return `${clock(b.start)}–${clock(b.end)}`;
}

const percent = (rate: number | null) => (rate === null ? '—' : `${Math.round(rate * 100)}%`);
const ms = (value: number | null) => (value === null ? '—' : `${value} ms`);

/** The whole window in one sentence: the chart's text alternative. */
function summary(health: Health): string {
  const t = health.totals;
  if (t.attempts === 0) return 'No attempt in the last 24 hours.';
  const busiest = health.buckets.reduce((a, b) => (b.attempts > a.attempts ? b : a));
  const worst = health.buckets.filter((b) => b.success_rate !== null).reduce<Bucket | null>((a, b) => (a === null || b.success_rate! < a.success_rate! ? b : a), null);
  return [
    `${t.attempts} attempt${t.attempts === 1 ? '' : 's'} in the last 24 hours: ${t.succeeded} succeeded, ${t.failed} failed${t.in_flight > 0 ? `, ${t.in_flight} in flight` : ''}`,
    `success rate ${percent(t.success_rate)}, latency median ${ms(t.latency_p50_ms)}, 95th percentile ${ms(t.latency_p95_ms)}`,
    `busiest hour ${hourLabel(busiest)} with ${busiest.attempts}`,
    ...(worst && worst.success_rate! < 1 ? [`lowest success rate ${percent(worst.success_rate)} at ${hourLabel(worst)}`] : []),
  ].join('; ') + '.';
}

/**
 * An endpoint's last 24 hours, hour by hour (Svix's endpoint statistics): a chart whose text
 * alternative is the summary, and the same figures as a table, where choosing an hour lists the
 * attempts behind it, each linking to its delivery.
 */
export function EndpointHealth({ subscriptionId }: { subscriptionId: string }) {
  const trpc = useTRPC();
  const health = useQuery({
    ...trpc.console.webhooks.health.queryOptions({ subscription_id: subscriptionId }),
    refetchInterval: (q) => (q.state.error && isFinal(q.state.error) ? false : 30_000),
    placeholderData: (previous) => previous,
  });
  const [selected, setSelected] = useState<string | null>(null);
  const chartId = useId();

  if (health.isPending) return <Loading label="Reading the last 24 hours…" />;
  if (health.isError) return <ErrorNotice error={health.error} onRetry={() => health.refetch()} />;
  const data = health.data.data;
  const busiest = Math.max(1, ...data.buckets.map((b) => b.attempts));
  const text = summary(data);
  const shown = data.buckets.filter((b) => b.attempts > 0);
  const bucket = data.buckets.find((b) => b.start === selected) ?? null;

  return (
    <div className="stack">
      <figure className="health-figure" aria-labelledby={`${chartId}-caption`}>
        <div className="health-bars" role="img" aria-label={text}>
          {data.buckets.map((b) => (
            <div
              key={b.start}
              className={`health-bar${b.start === selected ? ' is-selected' : ''}`}
              title={`${hourLabel(b)}: ${b.attempts} attempts, ${percent(b.success_rate)} succeeded`}
              // A pointer shortcut to the table's buttons, which are the keyboard's way in.
              onClick={() => b.attempts > 0 && setSelected(b.start)}
            >
              <span className="health-bar-failed" style={{ height: `${(b.failed / busiest) * 100}%` }} />
              <span className="health-bar-succeeded" style={{ height: `${(b.succeeded / busiest) * 100}%` }} />
            </div>
          ))}
        </div>
        <div className="health-axis muted small" aria-hidden="true">
          <span>{hourLabel(data.buckets[0]).split('–')[0]}</span>
          <span>now</span>
        </div>
        <figcaption id={`${chartId}-caption`} className="small">
          <span className="legend legend-succeeded" aria-hidden="true" /> succeeded <span className="legend legend-failed" aria-hidden="true" /> failed, attempts per hour. {text}
        </figcaption>
      </figure>

      {shown.length > 0 && (
        <div className="table-wrap" role="region" aria-label="Attempts per hour" tabIndex={0}>
          <table className="compact health-table">
            <caption className="visually-hidden">Attempts per hour, last 24 hours; hours without attempts are left out. Choose an hour to list its attempts.</caption>
            <thead>
              <tr>
                <th scope="col">Hour</th>
                <th scope="col">Attempts</th>
                <th scope="col">Succeeded</th>
                <th scope="col">Failed</th>
                <th scope="col">Success rate</th>
                <th scope="col">Latency p50</th>
                <th scope="col">p95</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((b) => (
                <tr key={b.start} className={b.start === selected ? 'is-selected' : undefined}>
                  <th scope="row">
                    <button type="button" className="button ghost small" aria-pressed={b.start === selected} onClick={() => setSelected(b.start === selected ? null : b.start)}>
                      {hourLabel(b)}
                    </button>
                  </th>
                  <td>{b.attempts}</td>
                  <td>{b.succeeded}</td>
                  <td>{b.failed > 0 ? <Badge tone="bad">{b.failed}</Badge> : 0}</td>
                  <td>{percent(b.success_rate)}</td>
                  <td className="nowrap">{ms(b.latency_p50_ms)}</td>
                  <td className="nowrap">{ms(b.latency_p95_ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {bucket && <BucketAttempts key={bucket.start} subscriptionId={subscriptionId} bucket={bucket} />}
    </div>
  );
}

function BucketAttempts({ subscriptionId, bucket }: { subscriptionId: string; bucket: Bucket }) {
  const trpc = useTRPC();
  const attempts = useQuery(trpc.console.webhooks.bucketAttempts.queryOptions({ subscription_id: subscriptionId, bucket_start: bucket.start }));
  const heading = useRef<HTMLHeadingElement>(null);
  const titleId = useId();
  // Keyed by its hour: a new choice mounts it, and the reader lands on its heading.
  useEffect(() => heading.current?.focus(), []);
  return (
    <section className="bucket-attempts" aria-labelledby={titleId}>
      <h3 id={titleId} className="h-small" tabIndex={-1} ref={heading}>
        Attempts {hourLabel(bucket)}
      </h3>
      {attempts.isPending ? (
        <Loading label="Reading the attempts…" />
      ) : attempts.isError ? (
        <ErrorNotice error={attempts.error} onRetry={() => attempts.refetch()} />
      ) : (
        <>
          <ol className="bucket-attempt-list" aria-label={`Attempts ${hourLabel(bucket)}, newest first`}>
            {attempts.data.data.attempts.map((a) => (
              <li key={a.attempt_id} data-outcome={a.outcome}>
                <a href={href.webhookDelivery(subscriptionId, a.delivery_id)}>
                  {a.kind === 'test' ? 'test event' : a.event_type} · attempt {a.attempt}
                </a>{' '}
                <Badge tone={a.outcome === 'delivered' ? 'good' : a.outcome === 'sending' ? 'info' : 'bad'}>{a.outcome === 'sending' ? 'in flight' : a.outcome.replace(/_/g, ' ')}</Badge>{' '}
                <span className="muted small">
                  {a.status_code ?? a.error_class ?? 'no answer'} · {ms(a.duration_ms)} · <time dateTime={a.started_at}>{formatTime(a.started_at)}</time>
                </span>
              </li>
            ))}
          </ol>
          {attempts.data.data.truncated && <p className="muted small">The newest 100 of {bucket.attempts} attempts.</p>}
        </>
      )}
    </section>
  );
}
