import { PARTNER_API_VERSION } from './versions';

/**
 * Webhook delivery as a receiver sees it (spec § Delivery and retry, § Signature verification):
 * the retry schedule, the headers and the signature. The service's delivery worker and the
 * partner CLI's `lop listen` both build deliveries from here, so a handler sees no difference.
 */

/** Delay before attempt n+1 after attempt n failed temporarily: six values, seven attempts. */
export const SPEC_RETRY_DELAYS_SECONDS = [60, 300, 1800, 7200, 43_200, 86_400] as const;
/** A receiver's Retry-After is honoured up to this many seconds (spec: 60 minutes). */
export const RETRY_AFTER_MAX_SECONDS = 3600;

/** A receiver rejects a delivery whose timestamp is further than this from its clock. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export const WEBHOOK_USER_AGENT = 'partner-service-webhooks/1';

/** The one mark of a test delivery (docs/webhooks.md § Test deliveries); a real delivery never has it. */
export const TEST_DELIVERY_HEADER = 'x-partner-test';

/**
 * Hex HMAC-SHA256 of `message` keyed with `key` (both UTF-8). The caller brings it (node:crypto
 * on the server and in the CLI): Web Crypto's HMAC is asynchronous only, and signing stays a
 * plain function here.
 */
export type HmacSha256Hex = (key: string, message: string) => string;

/** `whsec_` + 32 random bytes: recognisable in a secret store, never confused with an API key. */
export function generateSigningSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const base64 = btoa(String.fromCharCode(...bytes));
  return `whsec_${base64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}`;
}

/** `v1=` + hex HMAC-SHA256 of `timestamp + "." + raw body`, keyed with the whole secret. */
export function signPayload(hmac: HmacSha256Hex, secret: string, timestamp: number, body: string): string {
  return `v1=${hmac(secret, `${timestamp}.${body}`)}`;
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

/** Every header of one delivery attempt, in the order they are sent and documented. */
export function deliveryHeaders(hmac: HmacSha256Hex, input: DeliveryHeadersInput): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
    'x-partner-signature': signPayload(hmac, input.secret, input.timestamp, input.body),
    'x-partner-timestamp': String(input.timestamp),
    'x-partner-event-id': input.eventId,
    'x-partner-delivery-id': input.deliveryId,
    // The API version of the payload (spec: delivery headers), the same `v1` as the path and OpenAPI info.version.
    'x-partner-api-version': PARTNER_API_VERSION,
    ...(input.test ? { [TEST_DELIVERY_HEADER]: 'true' } : {}),
  };
}
