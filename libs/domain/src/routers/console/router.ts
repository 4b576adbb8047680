import { router } from '../../trpc';
import { createWebhookEndpoint } from './create-webhook-endpoint';
import { disableWebhookEndpoint } from './disable-webhook-endpoint';
import { getRequestLogEntry } from './get-request-log-entry';
import { getWebhookEndpointHealth } from './get-webhook-endpoint-health';
import { getSession } from './get-session';
import { listEventDeliveries } from './list-event-deliveries';
import { listOrderScenarios } from './list-order-scenarios';
import { listOrders } from './list-orders';
import { listWebhookBucketAttempts } from './list-webhook-bucket-attempts';
import { listWebhookDeliveries } from './list-webhook-deliveries';
import { listWebhookEndpoints } from './list-webhook-endpoints';
import { recoverWebhookDeliveries } from './recover-webhook-deliveries';
import { resendWebhookDelivery } from './resend-webhook-delivery';
import { retryWebhookDelivery } from './retry-webhook-delivery';
import { rotateWebhookSecret } from './rotate-webhook-secret';
import { sendWebhookTest } from './send-webhook-test';
import { updateWebhookEndpoint } from './update-webhook-endpoint';

/** Sandbox webhook self-service; production subscriptions stay with the laboratory's administrators. */
const webhooksRouter = router({
  list: listWebhookEndpoints,
  create: createWebhookEndpoint,
  update: updateWebhookEndpoint,
  rotateSecret: rotateWebhookSecret,
  disable: disableWebhookEndpoint,
  sendTest: sendWebhookTest,
  deliveries: listWebhookDeliveries,
  health: getWebhookEndpointHealth,
  bucketAttempts: listWebhookBucketAttempts,
  resend: resendWebhookDelivery,
  retryNow: retryWebhookDelivery,
  recover: recoverWebhookDeliveries,
});

/** tRPC only (no openapi meta): views the sandbox console needs that partner REST does not offer. */
export const consoleRouter = router({
  session: getSession,
  orders: listOrders,
  orderScenarios: listOrderScenarios,
  eventDeliveries: listEventDeliveries,
  requestLogEntry: getRequestLogEntry,
  webhooks: webhooksRouter,
});
