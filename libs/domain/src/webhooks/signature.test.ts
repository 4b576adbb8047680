import { describe, expect, it } from 'vitest';
import { deliveryHeaders } from './signature';

describe('delivery signature', () => {
  it('is `v1=` + hex HMAC-SHA256 of `timestamp.body` keyed with the whole secret (a vector computed with openssl)', () => {
    const headers = deliveryHeaders({ secret: 'whsec_test', timestamp: 1_700_000_000, body: '{"event_id":"evt_1"}', deliveryId: 'd', eventId: 'evt_1' });
    // printf '1700000000.{"event_id":"evt_1"}' | openssl dgst -sha256 -hmac whsec_test
    expect(headers['x-partner-signature']).toBe('v1=0344289cae2f5eb6d2640d79205fa65017efc017e224155b7ef95f784061172c');
  });
});
