import { describe, expect, it } from 'vitest';
import { freshExternalOrderId, randomId } from './format';
import { href, parseRoute } from './routing';

describe('console routes', () => {
  it('map every screen link back to its screen', () => {
    const id = '0b8f4a8e-3c1d-4f7a-9d2e-5a6b7c8d9e0f';
    expect(parseRoute(href.overview)).toEqual({ page: 'overview' });
    expect(parseRoute('')).toEqual({ page: 'overview' });
    expect(parseRoute(href.fixtures)).toEqual({ page: 'fixtures' });
    expect(parseRoute(href.orders)).toEqual({ page: 'orders' });
    expect(parseRoute(href.order(id))).toEqual({ page: 'order', orderId: id });
    expect(parseRoute(href.webhooks)).toEqual({ page: 'webhooks' });
    expect(parseRoute(href.webhook(id))).toEqual({ page: 'webhook', subscriptionId: id });
    const deliveryId = '1c9e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6';
    expect(parseRoute(href.webhookDelivery(id, deliveryId))).toEqual({ page: 'webhook', subscriptionId: id, deliveryId });
    expect(parseRoute(href.events)).toEqual({ page: 'events' });
    expect(parseRoute(href.logs)).toEqual({ page: 'logs' });
    expect(parseRoute(href.logEntry('req_4f9c1d2e8a7b6c5d4e3f2a1b'))).toEqual({ page: 'log', requestId: 'req_4f9c1d2e8a7b6c5d4e3f2a1b' });
  });

  it('answer an unknown path as not found instead of guessing a screen', () => {
    expect(parseRoute('#/orders/not-an-id')).toEqual({ page: 'not_found', path: '/orders/not-an-id' });
    expect(parseRoute('#/admin')).toEqual({ page: 'not_found', path: '/admin' });
    expect(parseRoute('#/webhooks/0b8f4a8e-3c1d-4f7a-9d2e-5a6b7c8d9e0f/deliveries/latest')).toEqual({ page: 'not_found', path: '/webhooks/0b8f4a8e-3c1d-4f7a-9d2e-5a6b7c8d9e0f/deliveries/latest' });
    expect(parseRoute('#/logs/not-a-request-id')).toEqual({ page: 'not_found', path: '/logs/not-a-request-id' });
  });
});

describe('identifiers the console generates for a create', () => {
  it('Idempotency-Key is a fresh UUID v4 every time', () => {
    const keys = new Set(Array.from({ length: 50 }, randomId));
    expect(keys.size).toBe(50);
    for (const key of keys) expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('external_order_id is fresh, names its fixture and stays far below the 190-character limit', () => {
    const a = freshExternalOrderId('minimal');
    const b = freshExternalOrderId('minimal');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^console-minimal-\d{14}-[0-9a-f]{6}$/);
    expect(freshExternalOrderId('provider').length).toBeLessThanOrEqual(64);
  });
});
