import { randomUUID } from 'node:crypto';
import { SpanKind, SpanStatusCode, trace, type Attributes, type Link, type Span } from '@opentelemetry/api';
import type { Database } from '@lop/db';
import { toPartnerEvent } from '../events/append';
import type { DataProtector } from '../security/protector';
import { traceparentContext, withSpan } from '../telemetry/tracing';
import { directRecorder, type AttemptRecorder } from './attempt-recorder';
import { attemptInFlight, cancelPendingDeliveries, deliveryAccess, holdDelivery, loadDeliveries, verdictOf, type DeliveryAccess, type LoadedDelivery } from './delivery-store';
import { AttemptInterruptedError, attemptDelivery, AttemptNotStartedError, systemClock, type AttemptOptions, type AttemptReport } from './delivery-attempt';
import type { DeliveryJob, DeliveryQueue, EnqueueRequest } from './delivery-queue';
import { decideNext, maxAttempts, type Decision, type RetryPolicy } from './retry-policy';

/**
 * Runs the attempt a delivery job wakes up for: claims it in the attempt log before the request
 * leaves, then completes it with the delivery's new state and (for a retry) the next job
 * (delivery-store.ts). The claim is the guard against duplicates: attempt n is claimed only while
 * the delivery is pending at exactly attempt n-1, so a job that runs twice cannot fork the chain,
 * and never past the last attempt the policy allows.
 */

export interface DeliveryProcessor {
  db: Database;
  queue: DeliveryQueue;
  protector: DataProtector;
  policy: RetryPolicy;
  attempt: Omit<AttemptOptions, 'signal'>;
  /** How long a claimed attempt stays `sending` before another run may take it as abandoned (the job's expiry). */
  leaseSeconds: number;
  /** How claims and completions reach the attempt log; each on its own unless given (attempt-recorder.ts). */
  recorder?: AttemptRecorder;
}

export type ProcessOutcome = 'delivered' | 'retry' | 'dead_lettered' | 'cancelled' | 'held' | 'not_due';

export interface DeliveryBatchJob {
  data: DeliveryJob;
  signal?: AbortSignal;
}

/**
 * Runs the attempts of a batch of jobs in parallel, each settled on its own: one job's failure
 * (database gone mid-record) never decides another's. A rejected entry means the job should be
 * released and run again later.
 *
 * Traces: the batch is a span of its own (a batch mixes deliveries of many requests) around the
 * batch load, linked to each delivery's trace; each attempt is a span in the trace of the request
 * that wrote its event (the traceparent the outbox stored), linked back to the batch.
 */
export async function processDeliveryJobs(
  processor: DeliveryProcessor,
  jobs: DeliveryBatchJob[],
  /** Called as each job settles, before the whole batch has (a dispatcher frees that job's slot). */
  onSettled?: (index: number, result: PromiseSettledResult<ProcessOutcome>) => void,
): Promise<PromiseSettledResult<ProcessOutcome>[]> {
  if (jobs.length === 0) return [];
  const run = { ...processor, recorder: processor.recorder ?? directRecorder(processor.db, processor.queue) };
  return withSpan('webhooks.batch', { root: true, attributes: { 'webhooks.batch.size': jobs.length } }, (batch) => processBatch(run, jobs, batch, onSettled));
}

async function processBatch(
  processor: DeliveryProcessor & { recorder: AttemptRecorder },
  jobs: DeliveryBatchJob[],
  batch: Span,
  onSettled?: (index: number, result: PromiseSettledResult<ProcessOutcome>) => void,
): Promise<PromiseSettledResult<ProcessOutcome>[]> {
  let loaded: Map<string, LoadedDelivery>;
  let access: DeliveryAccess;
  try {
    loaded = await withSpan('webhooks.load_deliveries', {}, () => loadDeliveries(processor.db, jobs.map((job) => job.data.delivery_id)));
    access = await deliveryAccess(processor.db, [...loaded.values()]);
  } catch (error) {
    const results = jobs.map((): PromiseSettledResult<ProcessOutcome> => ({ status: 'rejected', reason: error }));
    results.forEach((result, i) => onSettled?.(i, result));
    return results;
  }
  batch.addLinks([...loaded.values()].flatMap(({ delivery }) => linkTo(traceparentContext(delivery.traceparent))));
  // A secret re-sealed a moment ago with a key version this process has not heard of yet: reload the keyring first.
  await processor.protector.holdKeysFor([...loaded.values()].map(({ subscription }) => subscription.secretProtected)).catch(() => undefined);
  // One decryption per subscription and batch, not per delivery.
  const secrets = new Map<string, string>();
  const secretOf = (subscription: LoadedDelivery['subscription']) => {
    let secret = secrets.get(subscription.id);
    if (secret === undefined) secrets.set(subscription.id, (secret = processor.protector.decrypt<string>(subscription.secretProtected)));
    return secret;
  };
  const batchLink: Link = { context: batch.spanContext() };
  return Promise.all(
    jobs.map((job, i) =>
      processLoaded(processor, job.data, loaded.get(job.data.delivery_id), access, secretOf, batchLink, job.signal).then(
        (value): PromiseSettledResult<ProcessOutcome> => settle(i, { status: 'fulfilled', value }),
        (reason: unknown): PromiseSettledResult<ProcessOutcome> => settle(i, { status: 'rejected', reason }),
      ),
    ),
  );
  function settle(index: number, result: PromiseSettledResult<ProcessOutcome>) {
    onSettled?.(index, result);
    return result;
  }
}

function linkTo(context: ReturnType<typeof traceparentContext>): Link[] {
  const spanContext = context && trace.getSpanContext(context);
  return spanContext ? [{ context: spanContext }] : [];
}

/** Where the attempt goes, without the query string (it may carry the partner's own token) or userinfo. */
function destinationAttributes(url: string): Attributes {
  const parsed = new URL(url);
  const port = parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
  return { 'url.full': `${parsed.origin}${parsed.pathname}`, 'server.address': parsed.hostname, 'server.port': port };
}

async function processLoaded(
  processor: DeliveryProcessor & { recorder: AttemptRecorder },
  job: DeliveryJob,
  row: LoadedDelivery | undefined,
  access: DeliveryAccess,
  secretOf: (subscription: LoadedDelivery['subscription']) => string,
  batchLink: Link,
  signal?: AbortSignal,
): Promise<ProcessOutcome> {
  const { db } = processor;
  // attempts_made = attempt: that attempt was claimed by a run that never finished it (runAttempt).
  if (!row || row.delivery.state !== 'pending' || (row.delivery.attemptsMade !== job.attempt - 1 && row.delivery.attemptsMade !== job.attempt) || !row.event) return 'not_due';
  const { delivery, subscription, event } = row;
  const clock = processor.attempt.clock ?? systemClock;

  if (subscription.status !== 'active') {
    await cancelPendingDeliveries(db, { deliveryId: delivery.id }, new Date(clock()));
    return 'cancelled';
  }
  // Checked when an attempt is due, not when it was queued (an attempt claimed by an interrupted
  // run is finished first, as runAttempt says). The order's program withdrawn from the client: its
  // orders answer 404, so the event is not sent, now or after a re-grant.
  if (delivery.attemptsMade === job.attempt - 1 && !access.programGranted(row)) {
    await cancelPendingDeliveries(db, { deliveryId: delivery.id }, new Date(clock()), 'program_revoked');
    return 'cancelled';
  }
  // No active key left in the environment: held, without a job, until resumeHeldDeliveries sees a key again.
  if (delivery.attemptsMade === job.attempt - 1 && !access.keyActive(subscription)) {
    return (await holdDelivery(db, delivery.id, delivery.attemptsMade)) ? 'held' : 'not_due';
  }

  const requestContext = traceparentContext(delivery.traceparent);
  const attributes: Attributes = {
    'webhooks.delivery_id': delivery.id,
    'webhooks.attempt': job.attempt,
    'webhooks.event_id': event.id,
    'webhooks.event_type': event.type,
    'webhooks.subscription_id': subscription.id,
    'http.request.method': 'POST',
    ...destinationAttributes(subscription.url),
  };
  // Without a stored context (written while tracing was off) the attempt stays in the batch's trace.
  const spanOptions = requestContext ? { kind: SpanKind.CLIENT, parent: requestContext, links: [batchLink], attributes } : { kind: SpanKind.CLIENT, attributes };
  return withSpan('webhooks.attempt', spanOptions, async (span) => {
    const outcome = await runAttempt(processor, job, delivery.id, delivery.attemptsMade, subscription, event, secretOf(subscription), signal);
    span.setAttributes({ 'http.response.status_code': outcome.statusCode ?? undefined, 'network.peer.address': outcome.address ?? undefined, 'webhooks.outcome': outcome.outcome });
    if (outcome.errorClass) {
      span.setAttribute('error.type', outcome.errorClass);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    return outcome.outcome;
  });
}

/** The run of a job found its attempt `sending` within its lease: another run may still be sending it. */
export class AttemptInFlightError extends Error {
  override name = 'AttemptInFlightError';
}

interface AttemptSummary {
  outcome: ProcessOutcome;
  statusCode: number | null;
  address: string | null;
  errorClass: string | null;
}

async function runAttempt(
  processor: DeliveryProcessor & { recorder: AttemptRecorder },
  job: DeliveryJob,
  deliveryId: string,
  /** As loaded with the batch: the claim re-checks it in the database. */
  attemptsMade: number,
  subscription: LoadedDelivery['subscription'],
  event: NonNullable<LoadedDelivery['event']>,
  secret: string,
  signal?: AbortSignal,
): Promise<AttemptSummary> {
  const { db, policy, recorder } = processor;
  const clock = processor.attempt.clock ?? systemClock;
  const notDue: AttemptSummary = { outcome: 'not_due', statusCode: null, address: null, errorClass: null };
  const lastAttempt = maxAttempts(policy);
  if (job.attempt > lastAttempt) return notDue;

  if (attemptsMade === job.attempt) {
    // Attempt n was claimed by an earlier run of this job that never finished it (worker killed,
    // database lost): complete it as interrupted once its lease is over, then the chain goes on.
    const decision = decideNext({ kind: 'interrupted' }, job.attempt, policy, clock());
    const completed = await recorder.complete({ verdict: verdictOf(deliveryId, job.attempt, null, decision, clock(), true), next: nextJob(subscription, deliveryId, job.attempt, decision) });
    if (completed) return { outcome: decision.outcome, statusCode: null, address: null, errorClass: 'interrupted' };
    if (await attemptInFlight(db, deliveryId, job.attempt)) throw new AttemptInFlightError(`attempt ${job.attempt} of delivery ${deliveryId} is still in flight`);
    return notDue;
  }
  if (attemptsMade !== job.attempt - 1) return notDue;

  // The bytes GET /v1/events returns, stored at append (events.body): these are signed and sent.
  // An event an earlier release wrote has none and is rendered as GET /v1/events renders it.
  const body = event.body ?? JSON.stringify(toPartnerEvent(event));
  // Spec: x-partner-delivery-id identifies this delivery attempt, so each attempt has its own id
  // (the id of its attempt row); receivers deduplicate the event itself on event_id.
  const attemptId = randomUUID();
  const claim = (sending: { startedAt: Date; address: string | null; requestHeaders: Record<string, string> | null }) =>
    recorder.claim({
      deliveryId,
      attempt: job.attempt,
      attemptId,
      startedAt: sending.startedAt,
      address: sending.address,
      requestHeaders: sending.requestHeaders,
      requestBody: sending.requestHeaders === null ? null : body,
      maxAttempts: lastAttempt,
      leaseSeconds: processor.leaseSeconds,
    });
  let claimed = false;
  let report: AttemptReport;
  try {
    report = await attemptDelivery(
      {
        url: subscription.url,
        environment: subscription.environment,
        secret,
        body,
        deliveryId: attemptId,
        eventId: event.id,
        beforeSend: async (sending) => {
          if (!(await claim(sending))) throw new AttemptNotClaimedError();
          claimed = true;
        },
      },
      { ...processor.attempt, signal },
    );
  } catch (error) {
    if (error instanceof AttemptNotStartedError && error.cause instanceof AttemptNotClaimedError) return notDue;
    // Shut down mid-attempt: the attempt is in the log, as interrupted; the next one follows the schedule.
    if (error instanceof AttemptInterruptedError && claimed) {
      const decision = decideNext({ kind: 'interrupted' }, job.attempt, policy, clock());
      await recorder.complete({ verdict: verdictOf(deliveryId, job.attempt, null, decision, clock()), next: nextJob(subscription, deliveryId, job.attempt, decision) });
      return { outcome: decision.outcome, statusCode: null, address: null, errorClass: 'interrupted' };
    }
    throw error;
  }
  // No request was made (the destination was refused): claimed and completed here.
  if (!claimed && !(await claim({ startedAt: report.startedAt, address: report.address, requestHeaders: null }))) return notDue;
  const decision = decideNext(report.result, job.attempt, policy, clock());
  const recorded = await recorder.complete({ verdict: verdictOf(deliveryId, job.attempt, report, decision, clock()), next: nextJob(subscription, deliveryId, job.attempt, decision) });
  return {
    outcome: recorded ? decision.outcome : 'not_due',
    statusCode: report.statusCode,
    address: report.address,
    errorClass: decision.outcome === 'delivered' ? null : decision.errorClass,
  };
}

class AttemptNotClaimedError extends Error {
  override name = 'AttemptNotClaimedError';
}

function nextJob(subscription: LoadedDelivery['subscription'], deliveryId: string, attempt: number, decision: Decision): EnqueueRequest | undefined {
  return decision.outcome === 'retry'
    ? { delivery_id: deliveryId, attempt: attempt + 1, startAfterSeconds: decision.delaySeconds, environment: subscription.environment, clientId: subscription.clientId }
    : undefined;
}
