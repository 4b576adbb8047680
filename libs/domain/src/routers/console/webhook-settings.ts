import type { RequestContext } from '../../context';
import type { WebhookSelfServiceSettings } from '../../console/webhooks';
import { PartnerError } from '../../http/errors';

/** The API process's webhook settings; a process started without them cannot register or test endpoints. */
export function webhookSettingsOf(ctx: RequestContext): WebhookSelfServiceSettings {
  if (!ctx.webhooks) throw new PartnerError('unavailable', 'Webhook self-service is not available on this API process.');
  return ctx.webhooks;
}
