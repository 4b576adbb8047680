import { randomUUID } from 'node:crypto';
import { SpanKind, SpanStatusCode, trace, type Attributes, type Link, type Span } from '@opentelemetry/api';
import { and, eq, sql } from 'drizzle-orm';
import { events, preparedStatement, sqlOf, webhookDeliveries, webhookDeliveryAttempts, webhookSubscriptions, type Database } from '@lop/db';
import { toPartnerEvent } from '../events/append';
import type { DataProtector } from '../security/protector';
import { traceparentContext, withSpan } from '../telemetry/tracing';
import { attemptDelivery, systemClock, type AttemptOptions, type AttemptReport } from './delivery-attempt';
import type { DeliveryJob, DeliveryQueue } from './delivery-queue';
import { decideNext, type Decision, type RetryPolicy } from './retry-policy';

/**
 * Runs the attempt a delivery job wakes up for, then records it and schedules what follows in one
 * transaction: the attempt row, the delivery's new state and (for a retry) the next job. The
 * delivery row is the guard against duplicates: an attempt is recorded only if the delivery is
 * still pending at exactly the attempt before it, so a job that runs twice cannot fork the chain.
 */

export interface DeliveryProcessor {
  db: Database;
  queue: DeliveryQueue;
  protector: DataProtector;
  policy: RetryPolicy;
  attempt: Omit<AttemptOptions, 'signal'>;
}

export type ProcessOutcome = 'delivered' | 'retry' | 'dead_lettered' | 'cancelled' | 'not_due';

export interface DeliveryBatchJob {
  data: DeliveryJob;
  signal?: AbortSignal;
}

/**
 * The delivery, its subscription and its event for a whole batch of jobs in one round trip,
 * through a prepared statement: at backlog rates a query per job and drizzle's
 * query building per job were most of the worker's time.
 */
const deliveriesByIds = preparedStatement((db) =>
  db
    .select({ delivery: webhookDeliveries, subscription: webhookSubscriptions, event: events })
    .from(webhookDeliveries)
    .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId))
    .leftJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(sql`${webhookDeliveries.id} = any(${sql.placeholder('ids')}::uuid[])`)
    .prepare('webhook_load_deliveries'),
);
type LoadedDelivery = Awaited<ReturnType<ReturnType<typeof deliveriesByIds>['execute']>>[number];

async function loadDeliveries(db: Database, deliveryIds: string[]): Promise<Map<string, LoadedDelivery>> {
  const rows = await deliveriesByIds(db).execute({ ids: [...new Set(deliveryIds)] });
  return new Map(rows.map((row) => [row.delivery.id, row]));
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
export async function processDeliveryJobs(processor: DeliveryProcessor, jobs: DeliveryBatchJob[]): Promise<PromiseSettledResult<ProcessOutcome>[]> {
  if (jobs.length === 0) return [];
  return withSpan('webhooks.batch', { root: true, attributes: { 'webhooks.batch.size': jobs.length } }, (batch) => processBatch(processor, jobs, batch));
}

async function processBatch(processor: DeliveryProcessor, jobs: DeliveryBatchJob[], batch: Span): Promise<PromiseSettledResult<ProcessOutcome>[]> {
  let loaded: Map<string, LoadedDelivery>;
  try {
    loaded = await withSpan('webhooks.load_deliveries', {}, () => loadDeliveries(processor.db, jobs.map((job) => job.data.delivery_id)));
  } catch (error) {
    return jobs.map(() => ({ status: 'rejected', reason: error }));
  }
  batch.addLinks([...loaded.values()].flatMap(({ delivery }) => linkTo(traceparentContext(delivery.traceparent))));
  // One decryption per subscription and batch, not per delivery.
  const secrets = new Map<string, string>();
  const secretOf = (subscription: LoadedDelivery['subscription']) => {
    let secret = secrets.get(subscription.id);
    if (secret === undefined) secrets.set(subscription.id, (secret = processor.protector.decrypt<string>(subscription.secretProtected)));
    return secret;
  };
  const batchLink: Link = { context: batch.spanContext() };
  return Promise.allSettled(jobs.map((job) => processLoaded(processor, job.data, loaded.get(job.data.delivery_id), secretOf, batchLink, job.signal)));
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
  processor: DeliveryProcessor,
  job: DeliveryJob,
  row: LoadedDelivery | undefined,
  secretOf: (subscription: LoadedDelivery['subscription']) => string,
  batchLink: Link,
  signal?: AbortSignal,
): Promise<ProcessOutcome> {
  const { db } = processor;
  if (!row || row.delivery.state !== 'pending' || row.delivery.attemptsMade !== job.attempt - 1 || !row.event) return 'not_due';
  const { delivery, subscription, event } = row;
  const clock = processor.attempt.clock ?? systemClock;

  if (subscription.status !== 'active') {
    await db
      .update(webhookDeliveries)
      .set({ state: 'cancelled', failureReason: 'subscription_disabled', nextAttemptAt: null, completedAt: new Date(clock()) })
      .where(and(eq(webhookDeliveries.id, delivery.id), eq(webhookDeliveries.state, 'pending')));
    return 'cancelled';
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
    // The same object GET /v1/events returns, serialised once: these exact bytes are signed and sent.
    const body = JSON.stringify(toPartnerEvent(event));
    const secret = secretOf(subscription);
    // Spec: x-partner-delivery-id identifies this delivery attempt, so each attempt has its own id
    // (the id of its attempt row); receivers deduplicate the event itself on event_id.
    const attemptId = randomUUID();
    const report = await attemptDelivery(
      { url: subscription.url, environment: subscription.environment, secret, body, deliveryId: attemptId, eventId: event.id },
      { ...processor.attempt, signal },
    );
    const decision = decideNext(report.result, job.attempt, processor.policy, clock());
    const recorded = await recordAttempt(processor, delivery.id, job.attempt, report, decision, clock(), attemptId, body);
    const outcome = recorded ? decision.outcome : 'not_due';
    span.setAttributes({ 'http.response.status_code': report.statusCode ?? undefined, 'network.peer.address': report.address ?? undefined, 'webhooks.outcome': outcome });
    if (decision.outcome !== 'delivered') {
      span.setAttribute('error.type', decision.errorClass);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    return outcome;
  });
}

/** The attempt row, the delivery's state and (for a retry) the next job, together; false if another run got there first. */
export async function recordAttempt(
  processor: Pick<DeliveryProcessor, 'db' | 'queue'>,
  deliveryId: string,
  attempt: number,
  report: AttemptReport,
  decision: Decision,
  now: number,
  attemptId: string = randomUUID(),
  /** The exact bytes sent, kept with the attempt when a request was made. */
  body: string | null = null,
): Promise<boolean> {
  const requestBody = report.requestHeaders === null ? null : body;
  const nextAttemptAt = decision.outcome === 'retry' ? new Date(now + decision.delaySeconds * 1000) : null;
  const errorClass = decision.outcome === 'delivered' ? null : decision.errorClass;
  if (decision.outcome !== 'retry') {
    // The common case, in one statement (atomic without a transaction): a round trip matters at backlog rates.
    // postgres.js's own template, so it runs as a prepared statement: drizzle runs a statement it
    // did not prepare by name unprepared, and postgres.js then asks the server for its parameter
    // types first, a second round trip (and a write) on every attempt.
    const rows = await sqlOf(processor.db)`
      with updated as (
        update webhook_deliveries
        set attempts_made = ${attempt}, state = ${decision.outcome}, failure_reason = ${decision.outcome === 'dead_lettered' ? decision.reason : null},
            next_attempt_at = null, last_status_code = ${report.statusCode}, last_error_class = ${errorClass}, completed_at = ${new Date(now).toISOString()}::timestamptz
        where id = ${deliveryId} and state = 'pending' and attempts_made = ${attempt - 1}
        returning id)
      insert into webhook_delivery_attempts (id, delivery_id, attempt_number, started_at, duration_ms, status_code, error_class, outcome, destination_address,
                                             request_headers, request_body, response_body, response_body_truncated)
      select ${attemptId}::uuid, id, ${attempt}, ${report.startedAt.toISOString()}::timestamptz, ${report.durationMs}, ${report.statusCode}, ${errorClass}, ${decision.outcome}, ${report.address},
             ${report.requestHeaders === null ? null : JSON.stringify(report.requestHeaders)}::jsonb, ${requestBody}, ${report.responseBody}, ${report.responseBodyTruncated}
      from updated
      returning delivery_id`;
    return rows.length > 0;
  }
  return processor.db.transaction(async (tx) => {
    const [updated] = await tx
      .update(webhookDeliveries)
      .set({
        attemptsMade: attempt,
        state: 'pending',
        failureReason: null,
        nextAttemptAt,
        lastStatusCode: report.statusCode,
        lastErrorClass: errorClass,
        completedAt: null,
      })
      .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.state, 'pending'), eq(webhookDeliveries.attemptsMade, attempt - 1)))
      .returning({ id: webhookDeliveries.id });
    if (!updated) return false;
    await tx.insert(webhookDeliveryAttempts).values({
      id: attemptId,
      deliveryId,
      attemptNumber: attempt,
      startedAt: report.startedAt,
      durationMs: report.durationMs,
      statusCode: report.statusCode,
      errorClass,
      outcome: decision.outcome,
      retryAfterSeconds: decision.retryAfterSeconds,
      nextAttemptAt,
      destinationAddress: report.address,
      requestHeaders: report.requestHeaders,
      requestBody,
      responseBody: report.responseBody,
      responseBodyTruncated: report.responseBodyTruncated,
    });
    await processor.queue.enqueue(tx, [{ delivery_id: deliveryId, attempt: attempt + 1, startAfterSeconds: decision.delaySeconds }]);
    return true;
  });
}
