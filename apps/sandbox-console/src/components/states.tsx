import type { ReactNode } from 'react';
import { describeError, isFinal } from '../trpc';

export function Loading({ label }: { label: string }) {
  return (
    <p className="state state-loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {label}
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state state-empty">{children}</div>;
}

/** A failed call, in the API's own words, with its request_id for support; "Try again" only where another try can succeed. */
export function ErrorNotice({ error, title, onRetry }: { error: unknown; title?: string; onRetry?: () => void }) {
  const described = describeError(error);
  return (
    <div className="state state-error" role="alert">
      <p>
        <strong>{title ?? 'Something went wrong.'}</strong> {described.message}
      </p>
      {described.details.length > 0 && (
        <ul className="error-details">
          {described.details.map((d, i) => (
            <li key={i}>
              {d.field && <code>{d.field}</code>} {d.issue}
              {d.message ? ` — ${d.message}` : ''}
            </li>
          ))}
        </ul>
      )}
      <p className="muted small">
        <code>{described.code}</code>
        {described.requestId && (
          <>
            {' · request_id '}
            <code>{described.requestId}</code>
          </>
        )}
      </p>
      {onRetry && !isFinal(error) && (
        <>
          <p className="muted small">This view tries again by itself every few seconds, and as soon as the event stream answers again.</p>
          <button type="button" className="button secondary" onClick={onRetry}>
            Try again now
          </button>
        </>
      )}
    </div>
  );
}

export function Badge({ tone, children }: { tone?: 'neutral' | 'info' | 'good' | 'warn' | 'bad'; children: ReactNode }) {
  return <span className={`badge badge-${tone ?? 'neutral'}`}>{children}</span>;
}
