import type { Config } from '../config/config';
import type { DeliveryQueueSettings } from './delivery-queue';
import type { RetryPolicy } from './retry-policy';

/** The webhook settings of a configuration, in the shapes the modules take. */
export interface WebhookSettings {
  policy: RetryPolicy;
  queue: DeliveryQueueSettings;
  attemptTimeoutMs: number;
  allowLoopback: boolean;
  concurrency: number;
}

export function webhookSettings(config: Config): WebhookSettings {
  return {
    policy: { delaysSeconds: config.PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS, retryAfterMaxSeconds: config.PARTNER_WEBHOOK_RETRY_AFTER_MAX_SECONDS },
    queue: { attemptTimeoutSeconds: config.PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS, pollIntervalSeconds: config.PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS },
    attemptTimeoutMs: Math.round(config.PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS * 1000),
    allowLoopback: config.PARTNER_WEBHOOKS_ALLOW_LOOPBACK,
    concurrency: config.PARTNER_WEBHOOK_CONCURRENCY,
  };
}

/** Logged at warn level by every process that starts with the loopback allowance on. */
export const LOOPBACK_ALLOWANCE_WARNING =
  'PARTNER_WEBHOOKS_ALLOW_LOOPBACK=true: sandbox webhook subscriptions may deliver to http://127.0.0.1:<port> and http://localhost:<port>. For local development only; never enable it on a shared or production deployment.';
