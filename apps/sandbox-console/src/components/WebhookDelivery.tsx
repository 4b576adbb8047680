import { useId, useState } from 'react';
import { formatTime, relativeTime, type Tone } from '../format';
import type { Outputs } from '../trpc';
import { CopyButton } from './CopyButton';
import { Badge } from './states';

export type WebhookDelivery = Outputs['console']['webhooks']['deliveries']['data']['deliveries'][number];
type Attempt = WebhookDelivery['attempts'][number];

/**
 * How a delivery reads at a glance. Failures look like failures: a dead letter or a failed test
 * is an error, a delivery retrying after a failed attempt is a warning; only a delivery that has
 * not been attempted yet is routine pending work.
 */
/** A held delivery (failure_reason `no_active_key`): docs/webhooks.md § Held and cancelled deliveries. */
export const HELD_TEXT = 'your API client has no active key in this environment; it resumes, from the attempt it had reached, once a key is active again';

/** Why a cancelled delivery was not sent. */
export function cancelReason(reason: string | null): string {
  if (reason === 'program_revoked') return "the order's program was withdrawn from your API client before it was sent";
  if (reason === 'subscription_disabled') return 'the endpoint was disabled before it was sent';
  return reason ?? 'not sent';
}

export function deliveryStatus(d: { state: string; attempts_made: number; failure_reason?: string | null }): { label: string; tone: Tone } {
  if (d.state === 'pending' && d.failure_reason === 'no_active_key') return { label: 'held', tone: 'warn' };
  switch (d.state) {
    case 'delivered':
      return { label: 'delivered', tone: 'good' };
    case 'dead_lettered':
      return { label: 'dead letter', tone: 'bad' };
    case 'failed':
      return { label: 'failed', tone: 'bad' };
    case 'cancelled':
      return { label: 'cancelled', tone: 'neutral' };
    case 'pending':
      return d.attempts_made > 0 ? { label: 'retrying', tone: 'warn' } : { label: 'pending', tone: 'info' };
    default:
      return { label: d.state.replace(/_/g, ' '), tone: 'neutral' };
  }
}

function attemptOutcome(a: Attempt): string {
  if (a.outcome === 'sending') return 'in flight: sent, no answer yet';
  if (a.response) return `${a.response.status} · ${a.outcome.replace(/_/g, ' ')}`;
  return `${a.error_class ?? 'no answer'} · ${a.outcome.replace(/_/g, ' ')}`;
}

/**
 * One attempt as it happened: the request sent (signature header included), and the first 2 KB of
 * the answer. `nextAttemptAt` is the delivery's, given only for its latest attempt while it waits
 * for a retry: an attempt row keeps the retry time it planned, which "retry now", a dead letter or
 * a cancel make stale (docs/webhooks.md).
 */
export function AttemptDetail({ attempt, nextAttemptAt }: { attempt: Attempt; nextAttemptAt: string | null }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  const headers = attempt.request ? Object.entries(attempt.request.headers).map(([n, v]) => `${n}: ${v}`) : [];
  const request = attempt.request ? [`POST ${attempt.request.url}`, ...headers, '', attempt.request.body ?? ''].join('\n') : '';
  return (
    <li className={`attempt attempt-${attempt.outcome}`}>
      <div className="attempt-row">
        <button type="button" className="event-toggle" aria-expanded={open} aria-controls={id} onClick={() => setOpen(!open)}>
          <span className="event-chevron" aria-hidden="true">
            {open ? '▾' : '▸'}
          </span>
          <strong>Attempt {attempt.attempt}</strong>
          <span>{attemptOutcome(attempt)}</span>
          <span className="muted">{attempt.duration_ms === null ? 'in flight or interrupted' : `${attempt.duration_ms} ms`}</span>
          <time className="muted" dateTime={attempt.started_at}>
            {formatTime(attempt.started_at)}
          </time>
          <span className="visually-hidden">{open ? 'Hide' : 'Show'} the request and response</span>
        </button>
        {nextAttemptAt && (
          <span className="small warn-text">
            next attempt {formatTime(nextAttemptAt)} ({relativeTime(nextAttemptAt)})
          </span>
        )}
      </div>
      {open && (
        <div id={id} className="attempt-detail">
          <h3 className="h-small">Request</h3>
          {attempt.request ? (
            <>
              <pre className="http" tabIndex={0} aria-label={`Request of attempt ${attempt.attempt}`}>
                {request}
              </pre>
              <CopyButton text={attempt.request.body ?? ''} label="Copy body" />{' '}
              <CopyButton text={attempt.request.headers['x-partner-signature'] ?? ''} label="Copy signature header" />
            </>
          ) : (
            <p className="muted small">No request was sent: the destination was refused before connecting ({attempt.error_class ?? 'blocked'}).</p>
          )}
          <h3 className="h-small">Response</h3>
          {attempt.response ? (
            <>
              <p className="small">
                Status <strong>{attempt.response.status}</strong> · the first 2 KB of the body{attempt.response.truncated ? ' (it was longer)' : ''}:
              </p>
              <pre className="http" tabIndex={0} aria-label={`Response of attempt ${attempt.attempt}`}>
                {attempt.response.body_excerpt === null ? '(not kept for this attempt)' : attempt.response.body_excerpt || '(empty body)'}
              </pre>
            </>
          ) : (
            <p className="muted small">No response: {attempt.error_class ?? 'the receiver did not answer'}.</p>
          )}
        </div>
      )}
    </li>
  );
}

export function DeliveryStatusBadge({ delivery }: { delivery: { state: string; attempts_made: number; failure_reason?: string | null } }) {
  const status = deliveryStatus(delivery);
  return (
    <Badge tone={status.tone}>
      {status.tone === 'bad' ? '✗ ' : status.tone === 'warn' ? '⟳ ' : ''}
      {status.label}
    </Badge>
  );
}
