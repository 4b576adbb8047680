import { LaboratoryOperationError } from './operation';

/**
 * How far ahead of this service's clock a reported time may be: laboratory systems keep their own
 * clocks, and a few minutes of drift is not a time travelling fact.
 */
export const CLOCK_SKEW_MS = 5 * 60 * 1000;

/**
 * The time of a fact the laboratory reports (collected_at, received_at): what the stored fact and
 * the occurred_at of its events both carry, so a partner sees when it happened, not when it was
 * keyed in. Without a reported time the fact is taken to happen as it is recorded (`now`). A time
 * later than `now` (beyond clock skew) is refused: a fact cannot be reported before it happens.
 */
export function factTime(field: string, reported: string | undefined, now: Date): Date {
  if (reported === undefined) return now;
  const at = new Date(reported);
  if (at.getTime() > now.getTime() + CLOCK_SKEW_MS) {
    throw new LaboratoryOperationError('invalid', `${field} ${at.toISOString()} is in the future (now ${now.toISOString()}): report when it happened`);
  }
  return at;
}
