import { useEffect, useState } from 'react';

export type Route =
  | { page: 'overview' }
  | { page: 'fixtures' }
  | { page: 'orders' }
  | { page: 'order'; orderId: string }
  | { page: 'events' }
  | { page: 'logs' }
  | { page: 'log'; requestId: string }
  | { page: 'webhooks' }
  | { page: 'webhook'; subscriptionId: string; deliveryId?: string }
  | { page: 'not_found'; path: string };

/** Hash routes keep every screen a plain link that works under any base path. */
export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  if (path === '/' || path === '') return { page: 'overview' };
  if (path === '/fixtures') return { page: 'fixtures' };
  if (path === '/orders') return { page: 'orders' };
  if (path === '/events') return { page: 'events' };
  if (path === '/logs') return { page: 'logs' };
  const log = /^\/logs\/(req_[0-9A-Za-z_]{1,60})$/.exec(path);
  if (log) return { page: 'log', requestId: log[1] };
  if (path === '/webhooks') return { page: 'webhooks' };
  const webhook = /^\/webhooks\/([0-9a-f-]{36})$/.exec(path);
  if (webhook) return { page: 'webhook', subscriptionId: webhook[1] };
  const delivery = /^\/webhooks\/([0-9a-f-]{36})\/deliveries\/([0-9a-f-]{36})$/.exec(path);
  if (delivery) return { page: 'webhook', subscriptionId: delivery[1], deliveryId: delivery[2] };
  const order = /^\/orders\/([0-9a-f-]{36})$/.exec(path);
  if (order) return { page: 'order', orderId: order[1] };
  return { page: 'not_found', path };
}

export const href = {
  overview: '#/',
  fixtures: '#/fixtures',
  orders: '#/orders',
  order: (orderId: string) => `#/orders/${orderId}`,
  events: '#/events',
  logs: '#/logs',
  logEntry: (requestId: string) => `#/logs/${requestId}`,
  webhooks: '#/webhooks',
  webhook: (subscriptionId: string) => `#/webhooks/${subscriptionId}`,
  /** One delivery of an endpoint's log (a recovered dead letter's replay, an attempt of the health view). */
  webhookDelivery: (subscriptionId: string, deliveryId: string) => `#/webhooks/${subscriptionId}/deliveries/${deliveryId}`,
};

export function navigate(to: string): void {
  window.location.hash = to.replace(/^#/, '');
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
}
