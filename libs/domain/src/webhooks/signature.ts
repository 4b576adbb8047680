import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { PARTNER_API_VERSION } from '../versions';

export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** `whsec_` + 32 random bytes: recognisable in a secret store, never confused with an API key. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** `v1=` + hex HMAC-SHA256 of `timestamp + "." + raw body` (spec § Signature verification). */
export function signPayload(secret: string, timestamp: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** What a receiver does, written once here for tests, documentation and the test delivery. */
export function verifySignature(secret: string, headers: { signature?: string; timestamp?: string }, rawBody: string, nowSeconds: number): boolean {
  if (!headers.signature || !headers.timestamp || !/^\d+$/.test(headers.timestamp)) return false;
  const timestamp = Number(headers.timestamp);
  if (Math.abs(nowSeconds - timestamp) > SIGNATURE_TOLERANCE_SECONDS) return false;
  const expected = Buffer.from(signPayload(secret, timestamp, rawBody));
  const presented = Buffer.from(headers.signature);
  return expected.length === presented.length && timingSafeEqual(expected, presented);
}

export interface DeliveryHeadersInput {
  secret: string;
  body: string;
  /** Unix seconds of this attempt. */
  timestamp: number;
  deliveryId: string;
  eventId: string;
  /** A test delivery (console, admin `webhooks test`): flagged with TEST_DELIVERY_HEADER. */
  test?: boolean;
}

/** The one mark of a test delivery (docs/webhooks.md § Test deliveries); a real delivery never has it. */
export const TEST_DELIVERY_HEADER = 'x-partner-test';

export function deliveryHeaders(input: DeliveryHeadersInput): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'partner-service-webhooks/1',
    'x-partner-signature': signPayload(input.secret, input.timestamp, input.body),
    'x-partner-timestamp': String(input.timestamp),
    'x-partner-event-id': input.eventId,
    'x-partner-delivery-id': input.deliveryId,
    // The API version of the payload (spec: delivery headers), the same `v1` as the path and OpenAPI info.version.
    'x-partner-api-version': PARTNER_API_VERSION,
    ...(input.test ? { [TEST_DELIVERY_HEADER]: 'true' } : {}),
  };
}
