import { randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { events, webhookDeliveries, webhookDeliveryAttempts, webhookSubscriptions, type Database } from '@lop/db';
import { toPartnerEvent } from '../events/append';
import type { DataProtector } from '../security/protector';
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

export async function processDeliveryJob(processor: DeliveryProcessor, job: DeliveryJob, signal?: AbortSignal): Promise<ProcessOutcome> {
  const { db } = processor;
  const [row] = await db
    .select({ delivery: webhookDeliveries, subscription: webhookSubscriptions, event: events })
    .from(webhookDeliveries)
    .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId))
    .leftJoin(events, eq(events.id, webhookDeliveries.eventId))
    .where(eq(webhookDeliveries.id, job.delivery_id));
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

  // The same object GET /v1/events returns, serialised once: these exact bytes are signed and sent.
  const body = JSON.stringify(toPartnerEvent(event));
  const secret = processor.protector.decrypt<string>(subscription.secretProtected);
  // Spec: x-partner-delivery-id identifies this delivery attempt, so each attempt has its own id
  // (the id of its attempt row); receivers deduplicate the event itself on event_id.
  const attemptId = randomUUID();
  const report = await attemptDelivery(
    { url: subscription.url, environment: subscription.environment, secret, body, deliveryId: attemptId, eventId: event.id },
    { ...processor.attempt, signal },
  );
  const decision = decideNext(report.result, job.attempt, processor.policy, clock());
  const recorded = await recordAttempt(processor, delivery.id, job.attempt, report, decision, clock(), attemptId);
  return recorded ? decision.outcome : 'not_due';
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
): Promise<boolean> {
  const nextAttemptAt = decision.outcome === 'retry' ? new Date(now + decision.delaySeconds * 1000) : null;
  const errorClass = decision.outcome === 'delivered' ? null : decision.errorClass;
  if (decision.outcome !== 'retry') {
    // The common case, in one statement (atomic without a transaction): a round trip matters at backlog rates.
    const rows = (await processor.db.execute(sql`
      with updated as (
        update webhook_deliveries
        set attempts_made = ${attempt}, state = ${decision.outcome}, failure_reason = ${decision.outcome === 'dead_lettered' ? decision.reason : null},
            next_attempt_at = null, last_status_code = ${report.statusCode}, last_error_class = ${errorClass}, completed_at = ${new Date(now).toISOString()}::timestamptz
        where id = ${deliveryId} and state = 'pending' and attempts_made = ${attempt - 1}
        returning id)
      insert into webhook_delivery_attempts (id, delivery_id, attempt_number, started_at, duration_ms, status_code, error_class, outcome, destination_address)
      select ${attemptId}::uuid, id, ${attempt}, ${report.startedAt.toISOString()}::timestamptz, ${report.durationMs}, ${report.statusCode}, ${errorClass}, ${decision.outcome}, ${report.address}
      from updated
      returning delivery_id`)) as unknown as unknown[];
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
    });
    await processor.queue.enqueue(tx, [{ delivery_id: deliveryId, attempt: attempt + 1, startAfterSeconds: decision.delaySeconds }]);
    return true;
  });
}
