import { ApiError, requireSandbox, UsageError, type Api, type EventType } from '../api';
import { attempt, backoffMs, certificateHint, InterruptedError, isCertificateError, isDelivered, isRetryable, skipVerifyWarning, sleep, type AttemptOutcome } from '../forward';
import { clock, type Output, type Styles } from '../output';
import { secretFor } from '../secrets';
import { endOfStream, FOLLOW_WAIT_SECONDS, isTransient, MAX_OUTAGE_WAIT_MS, readPage, refusedCursor, whenReachable, type StreamEvent } from '../stream';

/**
 * `lop listen`: follows GET /v1/events and delivers each event to a local handler as the service
 * would, one at a time in stream order. The cursor it prints on stopping is the position after
 * the last event it settled (delivered, or failed and reported), so resuming from it re-sends
 * whatever was still in flight and loses nothing.
 */

export interface ListenOptions {
  forwardTo: string;
  events?: Set<EventType>;
  fromCursor?: string;
  secret?: string;
  allowProduction: boolean;
  /** Milliseconds between polls once the stream is read to its end. */
  intervalMs: number;
  maxAttempts: number;
  /** --skip-verify: accept the forward target's certificate unchecked (self-signed). */
  skipVerify: boolean;
  json: boolean;
}

/** Events read per poll. */
const PAGE_SIZE = 100;

export function parseForwardTo(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--forward-to is not a URL: ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--forward-to must be an http:// or https:// URL, got ${text}`);
  return url;
}

export type Verdict = 'delivered' | 'retrying' | 'failed';

/**
 * One attempt's line (listen and events resend): time, sequence, event type, the event id (what
 * `lop events resend` takes), the order, the handler's answer, duration, and what happens next.
 */
export function deliveryLine(style: Styles, item: StreamEvent, attemptNumber: number, maxAttempts: number, outcome: AttemptOutcome, verdict: Verdict, retryInMs: number): string {
  const { event } = item;
  const answer = outcome.status !== null ? String(outcome.status) : (outcome.error ?? 'no answer');
  const coloured = verdict === 'delivered' ? style.green(answer) : verdict === 'retrying' ? style.yellow(answer) : style.red(answer);
  const note =
    verdict === 'retrying'
      ? style.yellow(`  retrying in ${retryInMs / 1000} s (attempt ${attemptNumber} of ${maxAttempts})`)
      : verdict === 'failed'
        ? style.red(`  failed after ${attemptNumber} attempt${attemptNumber === 1 ? '' : 's'}`)
        : '';
  return `${style.dim(clock())}  ${`#${event.sequence}`.padEnd(6)}  ${event.type.padEnd(27)}  ${style.dim('event')} ${event.event_id}  ${style.dim('order')} ${event.data.order_id}  → ${coloured}  ${outcome.durationMs} ms${note}`;
}

interface Failure {
  sequence: number;
  event_id: string;
  type: EventType;
  status: number | null;
  error: string | null;
}

/** The command line that resumes a listen from `cursor`, as run: the same URL, filter and flags. */
export function listenResumeCommand(url: URL, options: Pick<ListenOptions, 'events' | 'skipVerify'>, cursor: string): string {
  return `lop listen --forward-to ${url.href} --from-cursor ${cursor}${options.events ? ` --events ${[...options.events].join(',')}` : ''}${options.skipVerify ? ' --skip-verify' : ''}`;
}

/** Runs until `stop` aborts (Ctrl-C) or the stream fails for good; resolves to the exit code. */
export async function listen(api: Api, options: ListenOptions, output: Output, stop: AbortSignal, onCursor: (cursor: string) => void): Promise<number> {
  const url = parseForwardTo(options.forwardTo);
  if (options.secret === '') throw new UsageError('--secret must not be empty');
  const { style } = output;

  // At start as mid-run: a service that is not up yet is waited for, not a reason to exit.
  let environment: Awaited<ReturnType<typeof requireSandbox>>;
  let cursor: string;
  let skipped = 0;
  try {
    environment = await whenReachable(() => requireSandbox(api, 'lop listen', { flag: '--allow-production', given: options.allowProduction }), output, options.json, stop, options.intervalMs);
    if (options.fromCursor !== undefined) {
      cursor = options.fromCursor;
      const from = cursor;
      // A cursor the API refuses is reported now (exit 2), not after "Ready".
      await whenReachable(() => readPage(api, from, 1), output, options.json, stop, options.intervalMs).catch((error: unknown) => {
        throw refusedCursor(error, '--from-cursor');
      });
    } else {
      ({ cursor, skipped } = await whenReachable(() => endOfStream(api), output, options.json, stop, options.intervalMs));
    }
  } catch (error) {
    if (!(error instanceof InterruptedError)) throw error;
    if (options.json) output.out(JSON.stringify({ kind: 'stopped', cursor: null, delivered: 0, failed: 0, not_matching: 0, failures: [] }));
    else output.out('Stopped before the service answered; nothing was forwarded.');
    return 0;
  }
  onCursor(cursor);
  const { secret, source, file, key } = await secretFor(url, options.secret);
  if (options.skipVerify) output.err(style.yellow(skipVerifyWarning(url)));

  const filter = options.events ? [...options.events].join(',') : 'all types';
  if (options.json) {
    output.out(JSON.stringify({ kind: 'ready', environment, forward_to: url.href, events: options.events ? [...options.events] : 'all', secret, cursor, skipped }));
  } else {
    output.out(`${style.bold('Forwarding')} ${environment} events (${filter}) to ${style.cyan(url.href)}`);
    const kept = source === 'kept' ? `the one kept for ${key}` : source === 'new' ? `new, kept for ${key}` : `from --secret, kept for ${key}`;
    output.out(`Signing secret: ${style.bold(secret)}  ${style.dim(`(${kept} in ${file}; --secret sets another)`)}`);
    output.out(
      options.fromCursor !== undefined
        ? `Starting after cursor ${cursor}`
        : `Starting after cursor ${cursor} ${style.dim(`(now: ${skipped} earlier event${skipped === 1 ? '' : 's'} not forwarded; --from-cursor replays)`)}`,
    );
    output.out(style.dim('Ready. Ctrl-C stops and prints the cursor to resume from.'));
  }

  let delivered = 0;
  let notMatching = 0;
  const failures: Failure[] = [];
  let outageWaitMs = options.intervalMs;
  let fatal: unknown = null;

  let certificateHinted = false;
  const report = (item: StreamEvent, attemptNumber: number, outcome: AttemptOutcome, verdict: Verdict, retryInMs: number) => {
    const { event } = item;
    if (options.json) {
      output.out(
        JSON.stringify({
          kind: 'delivery',
          time: new Date().toISOString(),
          sequence: event.sequence,
          event_id: event.event_id,
          type: event.type,
          order_id: event.data.order_id,
          attempt: attemptNumber,
          delivery_id: outcome.deliveryId,
          status: outcome.status,
          error: outcome.error,
          duration_ms: outcome.durationMs,
          outcome: verdict,
          ...(verdict === 'retrying' ? { retry_in_ms: retryInMs } : {}),
        }),
      );
    } else {
      output.out(deliveryLine(style, item, attemptNumber, options.maxAttempts, outcome, verdict, retryInMs));
    }
    if (isCertificateError(outcome) && !certificateHinted) {
      certificateHinted = true;
      output.err(style.yellow(certificateHint(url, outcome.error!)));
    }
  };

  /** Delivers one event with retries; throws InterruptedError when stopped before it settled. */
  const deliver = async (item: StreamEvent) => {
    for (let n = 1; ; n++) {
      const outcome = await attempt(url, secret, item.raw, item.event.event_id, stop, { skipVerify: options.skipVerify });
      if (isDelivered(outcome)) {
        report(item, n, outcome, 'delivered', 0);
        delivered++;
        return;
      }
      if (!isRetryable(outcome) || n >= options.maxAttempts) {
        report(item, n, outcome, 'failed', 0);
        failures.push({ sequence: item.event.sequence, event_id: item.event.event_id, type: item.event.type, status: outcome.status, error: outcome.error });
        return;
      }
      report(item, n, outcome, 'retrying', backoffMs(n));
      await sleep(backoffMs(n), stop);
    }
  };

  try {
    while (!stop.aborted) {
      let page;
      try {
        // Held by the service until the next event commits (no sleep between reads): as prompt as a webhook.
        page = await readPage(api, cursor, PAGE_SIZE, { waitSeconds: FOLLOW_WAIT_SECONDS, stop });
        outageWaitMs = options.intervalMs;
      } catch (error) {
        // A restarting service or a rate limit is weathered; anything else (a revoked key, a bad cursor) ends the run.
        if (!isTransient(error)) throw error;
        const message = error instanceof ApiError ? `${error.code}: ${error.message}` : (error as Error).message;
        if (options.json) output.out(JSON.stringify({ kind: 'stream_error', time: new Date().toISOString(), message, retry_in_ms: outageWaitMs }));
        else output.err(style.yellow(`${clock()}  reading the stream failed (${message}); trying again in ${outageWaitMs / 1000} s`));
        await sleep(outageWaitMs, stop);
        outageWaitMs = Math.min(outageWaitMs * 2, MAX_OUTAGE_WAIT_MS);
        continue;
      }

      let settled = 0;
      try {
        for (const item of page.events) {
          if (options.events && !options.events.has(item.event.type)) notMatching++;
          else await deliver(item);
          settled++;
        }
      } catch (error) {
        if (!(error instanceof InterruptedError)) throw error;
      }

      if (settled === page.events.length) {
        cursor = page.nextCursor;
        onCursor(cursor);
      } else {
        // Stopped inside a page: the cursor right after the last settled event comes from the
        // API (cursors are opaque), by reading exactly that many events again.
        if (settled > 0) {
          const upTo = await readPage(api, cursor, settled);
          if (upTo.events.at(-1)?.event.event_id === page.events[settled - 1].event.event_id) cursor = upTo.nextCursor;
          onCursor(cursor);
        }
        break;
      }
    }
  } catch (error) {
    if (!(error instanceof InterruptedError)) fatal = error;
  }

  if (options.json) {
    output.out(JSON.stringify({ kind: 'stopped', cursor, delivered, failed: failures.length, not_matching: notMatching, failures }));
  } else {
    output.out('');
    output.out(
      `Stopped: ${style.green(`${delivered} delivered`)}, ${failures.length ? style.red(`${failures.length} failed`) : '0 failed'}${options.events ? `, ${notMatching} not matching --events` : ''}.`,
    );
    for (const failure of failures) {
      output.out(style.red(`  failed: #${failure.sequence} ${failure.type} ${failure.event_id} (${failure.status ?? failure.error})`));
    }
    output.out(`Cursor: ${style.bold(cursor)}`);
    // Runs as printed: the secret is the one kept for this URL.
    output.out(style.dim(`Resume with: ${listenResumeCommand(url, options, cursor)}`));
  }
  if (fatal) throw fatal;
  return failures.length > 0 ? 1 : 0;
}
