import { createHmac, timingSafeEqual } from 'node:crypto';

/** Deliveries older or newer than this, against your clock, are rejected (replay protection). */
export const TOLERANCE_SECONDS = 300;

/**
 * Verifies a webhook delivery before you parse it. `rawBody` must be the exact bytes received
 * (read the body as text; do not re-serialise parsed JSON). Returns the event, or throws.
 */
export function verifyWebhook(secret: string, headers: Record<string, string | undefined>, rawBody: string, now = Date.now()): { event_id: string; type: string; [key: string]: unknown } {
  const signature = headers['x-partner-signature'];
  const timestamp = headers['x-partner-timestamp'];
  if (!signature || !timestamp || !/^\d+$/.test(timestamp)) throw new Error('missing or malformed signature headers');
  if (Math.abs(now / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) throw new Error('timestamp outside the tolerance');

  const expected = `v1=${createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')}`;
  const a = Buffer.from(expected);
  const b = Buffer.from(signature);
  if (a.length !== b.length || !timingSafeEqual(a, b)) throw new Error('signature mismatch');

  // Only now is the body trusted. Deduplicate on event_id (or x-partner-event-id) before acting.
  return JSON.parse(rawBody);
}
