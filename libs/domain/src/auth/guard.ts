import type { RequestContext } from '../context';
import { PartnerError } from '../http/errors';
import { authenticate, requireScope, type Caller } from './authenticate';
import type { Scope } from './scopes';

/** Budgets a procedure can spend from. */
export type RateLimitPolicy = 'create_order' | 'webhook_operations';

/**
 * Whose budget a call spends, once authenticated: order creation per API key; webhook operations
 * that make the service send (test sends, resends, retries, recoveries, endpoint creations) per
 * (client, environment), shared by all its keys, so more keys buy no more sending.
 */
export const RATE_LIMIT_SUBJECT: Record<RateLimitPolicy, (caller: Caller) => string> = {
  create_order: (caller) => caller.keyId,
  webhook_operations: (caller) => `client:${caller.clientId}:${caller.environment}`,
};

export interface GuardRules {
  /** Scope the key must carry; none for health, fixtures and scenarios. */
  scope?: Scope;
  /** Budget one call spends, after authentication (an unauthenticated call spends nothing and writes nothing). */
  rateLimit?: RateLimitPolicy;
}

/**
 * Every protection a partner call gets, in one place, whichever door it came through (DESIGN §13):
 * authentication first, then the door's environment rule, the scope, and the rate limit.
 */
export async function guard(ctx: RequestContext, rules: GuardRules): Promise<Caller> {
  const caller = await authenticate(ctx.sql, ctx.authorization);
  // The console is a sandbox tool; production data is reached through REST only.
  if (ctx.door === 'console' && caller.environment !== 'sandbox') {
    throw new PartnerError('forbidden', 'The sandbox console accepts sandbox keys only (lop_test_…); use a production key with the partner REST API.', {
      details: [{ field: 'Authorization', issue: 'production_key_on_console' }],
    });
  }
  if (rules.scope) requireScope(caller, rules.scope);
  // Keyed on ids, not the header text: "bearer", "BEARER" or extra spaces share one budget.
  if (rules.rateLimit) await ctx.spendRateLimit(rules.rateLimit, RATE_LIMIT_SUBJECT[rules.rateLimit](caller));
  return caller;
}
