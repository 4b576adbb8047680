import { describe, expect, it } from 'vitest';
import { deliveryHeaders, EVENT_TYPES, generateSigningSecret, signPayload, TEST_DELIVERY_HEADER } from './index';

describe('the published vocabulary', () => {
  it('lists exactly the spec’s nine event types, in the spec’s order', () => {
    expect(EVENT_TYPES).toEqual([
      'order.created',
      'order.updated',
      'order.cancelled',
      'specimen.updated',
      'result.partial',
      'result.final',
      'result.corrected',
      'result.critical',
      'integration.action_required',
    ]);
  });
});

describe('webhook signing', () => {
  it('signs `timestamp + "." + raw body` keyed with the whole secret, as `v1=` + the hex HMAC', () => {
    const calls: [string, string][] = [];
    const hmac = (key: string, message: string) => {
      calls.push([key, message]);
      return '0344289cae2f5eb6d2640d79205fa65017efc017e224155b7ef95f784061172c';
    };
    expect(signPayload(hmac, 'whsec_test', 1_700_000_000, '{"event_id":"evt_1"}')).toBe('v1=0344289cae2f5eb6d2640d79205fa65017efc017e224155b7ef95f784061172c');
    expect(calls).toEqual([['whsec_test', '1700000000.{"event_id":"evt_1"}']]);
  });

  it('sends the documented headers in their documented order, the test mark only on a test delivery', () => {
    const input = { secret: 's', body: '{}', timestamp: 7, deliveryId: 'd', eventId: 'e' };
    const headers = deliveryHeaders(() => 'ff', input);
    expect(headers).toEqual({
      'content-type': 'application/json',
      'user-agent': 'partner-service-webhooks/1',
      'x-partner-signature': 'v1=ff',
      'x-partner-timestamp': '7',
      'x-partner-event-id': 'e',
      'x-partner-delivery-id': 'd',
      'x-partner-api-version': 'v1',
    });
    expect(Object.keys(headers)).toEqual(['content-type', 'user-agent', 'x-partner-signature', 'x-partner-timestamp', 'x-partner-event-id', 'x-partner-delivery-id', 'x-partner-api-version']);
    expect(deliveryHeaders(() => 'ff', { ...input, test: true })[TEST_DELIVERY_HEADER]).toBe('true');
  });

  it('makes signing secrets of `whsec_` + 32 random bytes in base64url', () => {
    const secret = generateSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(generateSigningSecret()).not.toBe(secret);
  });
});
