/**
 * What happens after one delivery attempt (spec § Delivery and retry). Pure: no I/O, no clock of
 * its own. The schedule is data (PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS); the status classes are
 * a table; this file only combines them.
 */

/** How an attempt ended, as the delivery attempt observed it. */
export type AttemptResult =
  | { kind: 'response'; status: number; retryAfter?: string | null }
  | { kind: 'timeout' }
  | { kind: 'network' }
  | { kind: 'blocked_destination' }
  /** The attempt's worker stopped (or lost its database) before the attempt ended: the receiver may have got it. */
  | { kind: 'interrupted' };

export interface RetryPolicy {
  /** Delay before attempt n+1 after attempt n failed temporarily: delays[n-1]. Six values → seven attempts. */
  delaysSeconds: readonly number[];
  /** A receiver's Retry-After is honoured up to this many seconds (spec: 60 minutes). */
  retryAfterMaxSeconds: number;
}

export const maxAttempts = (policy: RetryPolicy): number => policy.delaysSeconds.length + 1;

export type ErrorClass = 'http_status' | 'redirect' | 'timeout' | 'network' | 'blocked_destination' | 'interrupted';

export type Decision =
  | { outcome: 'delivered' }
  | { outcome: 'retry'; errorClass: ErrorClass; delaySeconds: number; retryAfterSeconds: number | null }
  | { outcome: 'dead_lettered'; errorClass: ErrorClass; reason: 'permanent' | 'exhausted' };

/** Statuses below 500 that are worth retrying: the receiver said "not now", not "never". */
const TEMPORARY_4XX = new Set([408, 409, 425, 429]);

type StatusClass = 'success' | 'temporary' | 'permanent';

/** The spec's table. Redirects are never followed, so a 3xx is a permanent failure. */
export function classifyStatus(status: number): StatusClass {
  if (status >= 200 && status < 300) return 'success';
  if (status >= 500) return 'temporary';
  if (TEMPORARY_4XX.has(status)) return 'temporary';
  return 'permanent';
}

/**
 * Seconds a Retry-After value asks for, or null when absent or unreadable. Accepts delta-seconds
 * and an HTTP date (RFC 9110 § 10.2.3); a date in the past asks for no wait.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  // Only IMF-fixdate/RFC 850/asctime shapes: they all contain a weekday/month name and a time.
  if (!/[A-Za-z]{3}/.test(text) || !/\d{1,2}:\d{2}:\d{2}/.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/** What to do after attempt number `attempt` (1-based) ended with `result`. */
export function decideNext(result: AttemptResult, attempt: number, policy: RetryPolicy, now: number): Decision {
  let errorClass: ErrorClass;
  let retryAfterSeconds: number | null = null;
  switch (result.kind) {
    case 'response': {
      const statusClass = classifyStatus(result.status);
      if (statusClass === 'success') return { outcome: 'delivered' };
      errorClass = result.status >= 300 && result.status < 400 ? 'redirect' : 'http_status';
      if (statusClass === 'permanent') return { outcome: 'dead_lettered', errorClass, reason: 'permanent' };
      retryAfterSeconds = parseRetryAfter(result.retryAfter, now);
      break;
    }
    case 'blocked_destination':
      return { outcome: 'dead_lettered', errorClass: 'blocked_destination', reason: 'permanent' };
    default:
      errorClass = result.kind;
  }
  if (attempt >= maxAttempts(policy)) return { outcome: 'dead_lettered', errorClass, reason: 'exhausted' };
  const scheduled = policy.delaysSeconds[attempt - 1];
  // Retry-After can only push the next attempt later than the schedule, and never past the cap.
  const requested = retryAfterSeconds === null ? 0 : Math.min(retryAfterSeconds, policy.retryAfterMaxSeconds);
  return { outcome: 'retry', errorClass, delaySeconds: Math.max(scheduled, requested), retryAfterSeconds };
}
