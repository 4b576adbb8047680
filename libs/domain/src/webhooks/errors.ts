/**
 * Why a webhook operation was refused, as a code each door maps to its own answer: the console
 * to a partner error envelope (console/webhooks.ts), the admin CLI to `error: <message>` and its
 * failure exit status. The message is written for an operator and shown as is by the CLI.
 */
export type WebhookErrorCode =
  /** No such subscription, delivery or API client. */
  | 'not_found'
  /** The destination URL is not public (the guard's reason is in `reason`). */
  | 'refused_destination'
  | 'subscription_disabled'
  /** The (client, environment) already has its maximum of active subscriptions. */
  | 'subscription_limit'
  /** Another replay or recovery of the same endpoint holds the endpoint's replay lock right now. */
  | 'recovery_in_progress'
  /** The event already has a delivery pending on the endpoint: a second one would only duplicate it. */
  | 'replay_pending'
  /** Anything else the state of things does not allow (an inactive client, a pending or test delivery replayed). */
  | 'not_allowed';

export class WebhookError extends Error {
  override name = 'WebhookError';
  constructor(
    readonly code: WebhookErrorCode,
    message: string,
    /** For refused_destination: why the destination guard refused the URL. */
    readonly reason?: string,
  ) {
    super(message);
  }
}

export const subscriptionDisabled = (subscriptionId: string) => new WebhookError('subscription_disabled', `webhook subscription ${subscriptionId} is disabled`);
