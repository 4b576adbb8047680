import { ApiError, requireSandbox, UsageError, type Api } from '../api';
import { attempt, backoffMs, certificateHint, isCertificateError, isDelivered, isRetryable, skipVerifyWarning, sleep } from '../forward';
import type { Output } from '../output';
import { existingSecretFor, forwardKey } from '../secrets';
import { MAX_PAGE, readPage, whenReachable, type StreamEvent } from '../stream';
import { deliveryLine, parseForwardTo } from './listen';

/**
 * `lop events resend <event_id> --forward-to <url>`: one event of the stream delivered again, as
 * `lop listen` delivers it (the same bytes, headers and signature, with the secret kept for the
 * URL), after a handler fix — without replaying from an older cursor. With no secret kept for the
 * URL and no --secret it refuses: a secret made up now is one no handler verifies.
 */

export interface ResendOptions {
  forwardTo: string;
  secret?: string;
  allowProduction: boolean;
  maxAttempts: number;
  skipVerify: boolean;
  json: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The event with this id, read from the stream (cursors are opaque: the stream is paged from its start). */
async function findEvent(api: Api, eventId: string): Promise<StreamEvent | null> {
  let cursor: string | undefined;
  for (;;) {
    const page = await readPage(api, cursor, MAX_PAGE);
    const found = page.events.find((item) => item.event.event_id === eventId);
    if (found) return found;
    if (!page.hasMore) return null;
    cursor = page.nextCursor;
  }
}

export async function resendEvent(api: Api, eventId: string, options: ResendOptions, output: Output, stop: AbortSignal): Promise<number> {
  const url = parseForwardTo(options.forwardTo);
  if (!UUID.test(eventId)) throw new UsageError(`not an event id: ${eventId} (the event_id of an event, e.g. from a line of lop listen or lop events tail)`);
  if (options.secret === '') throw new UsageError('--secret must not be empty');
  const kept = await existingSecretFor(url, options.secret);
  if (!kept) {
    throw new UsageError(
      `no signing secret is kept for ${forwardKey(url)}: pass the one your handler verifies with, --secret whsec_…, or run lop listen --forward-to ${url.href} first (it makes one and keeps it)`,
      'no_kept_secret',
    );
  }
  const { secret } = kept;
  await whenReachable(() => requireSandbox(api, 'lop events resend', { flag: '--allow-production', given: options.allowProduction }), output, options.json, stop);
  const item = await whenReachable(() => findEvent(api, eventId), output, options.json, stop);
  if (!item) throw new ApiError(404, 'not_found', `no event ${eventId} in this key's stream`, null, [], null);
  const { style } = output;
  if (options.skipVerify) output.err(style.yellow(skipVerifyWarning(url)));

  for (let n = 1; ; n++) {
    const outcome = await attempt(url, secret, item.raw, eventId, stop, { skipVerify: options.skipVerify });
    const delivered = isDelivered(outcome);
    const retrying = !delivered && isRetryable(outcome) && n < options.maxAttempts;
    const verdict = delivered ? 'delivered' : retrying ? 'retrying' : 'failed';
    if (options.json) {
      output.out(
        JSON.stringify({
          kind: 'delivery',
          time: new Date().toISOString(),
          sequence: item.event.sequence,
          event_id: eventId,
          type: item.event.type,
          order_id: item.event.data.order_id,
          attempt: n,
          delivery_id: outcome.deliveryId,
          status: outcome.status,
          error: outcome.error,
          duration_ms: outcome.durationMs,
          outcome: verdict,
          ...(retrying ? { retry_in_ms: backoffMs(n) } : {}),
        }),
      );
    } else {
      output.out(deliveryLine(style, item, n, options.maxAttempts, outcome, verdict, retrying ? backoffMs(n) : 0));
    }
    if (isCertificateError(outcome)) output.err(style.yellow(certificateHint(url, outcome.error!)));
    if (delivered) return 0;
    if (!retrying) return 1;
    await sleep(backoffMs(n), stop);
  }
}
