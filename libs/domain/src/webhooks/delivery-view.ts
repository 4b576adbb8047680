import type { AttemptRow, DeliveryRow } from './delivery-store';

/**
 * The one row → view mapping of a delivery and its attempts. The admin CLI prints it whole; the
 * console adds what it shows besides (the event type, each attempt's request and response) and
 * its output schemas keep only the fields they document, so the resolved address and who asked
 * for a replay stay with the administrators.
 */

export function describeAttempt(a: AttemptRow) {
  return {
    // The x-partner-delivery-id header value this attempt was sent with.
    attempt_id: a.id,
    attempt: a.attemptNumber,
    started_at: a.startedAt.toISOString(),
    duration_ms: a.durationMs,
    status_code: a.statusCode,
    error_class: a.errorClass,
    outcome: a.outcome,
    retry_after_seconds: a.retryAfterSeconds,
    next_attempt_at: a.nextAttemptAt?.toISOString() ?? null,
    destination_address: a.destinationAddress,
  };
}

export function describeDelivery(d: DeliveryRow, attempts: AttemptRow[], replayedBy: string[], recoveredBy: string | null = null) {
  return {
    delivery_id: d.id,
    subscription_id: d.subscriptionId,
    event_id: d.eventId,
    kind: d.kind,
    replay_of: d.replayOf,
    // The other way round: the replays of this delivery, oldest first (a dead letter leads to them).
    replayed_by: replayedBy,
    requested_by: d.requestedBy,
    // A dead letter whose event was replayed (recover, resend): when, and by which replay (delivery-store.ts recoveriesOf).
    recovered_at: d.recoveredAt?.toISOString() ?? null,
    recovered_by: recoveredBy,
    state: d.state,
    failure_reason: d.failureReason,
    attempts_made: d.attemptsMade,
    next_attempt_at: d.nextAttemptAt?.toISOString() ?? null,
    last_status_code: d.lastStatusCode,
    last_error_class: d.lastErrorClass,
    created_at: d.createdAt.toISOString(),
    completed_at: d.completedAt?.toISOString() ?? null,
    attempts: attempts.map(describeAttempt),
  };
}
export type DeliveryView = ReturnType<typeof describeDelivery>;

/** A stored answer excerpt as text for a reader: UTF-8, an invalid sequence as U+FFFD (a NUL stays a NUL). */
export function excerptText(bytes: Buffer | null): string | null {
  return bytes === null ? null : new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}
