import type { Scope } from '@lop/contract';
import type { RateLimitPolicy, RequestContext } from './context';
import { PartnerError } from './http/errors';
import { authenticate, requireScope, type Caller } from './auth/authenticate';

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
  ctx.identified.caller = caller;
  // The console is a sandbox tool; production data is reached through REST only.
  if (ctx.door === 'console' && caller.environment !== 'sandbox') {
    throw new PartnerError('forbidden', 'The sandbox console accepts sandbox keys only (lop_test_…); use a production key with the partner REST API.', {
      details: [{ field: 'Authorization', issue: 'production_key_on_console' }],
    });
  }
  if (rules.scope) requireScope(caller, rules.scope);
  // The budget belongs to the tenant, not the key: minting more keys buys a flooding client nothing.
  // Spent through the client's write gate (a lane of its own): the budget is one counter row, and a
  // flood of increments must wait here, not on that row's lock with a pooled connection each.
  if (rules.rateLimit) {
    try {
      await ctx.writeGate.run(caller, () => ctx.spendRateLimit(rules.rateLimit!, `${caller.clientId}:${caller.environment}`), 'rate-limit');
    } catch (error) {
      // A refusal is answered after a short pause, outside the gate: a client that ignores
      // Retry-After and resends at once can then make only a few requests a second per connection,
      // instead of thousands whose parsing and authentication take the CPU other clients need.
      if (error instanceof PartnerError && error.errorCode === 'rate_limited') await new Promise((resolve) => setTimeout(resolve, REFUSAL_PAUSE_MS));
      throw error;
    }
  }
  return caller;
}

/** Well inside the second within which a refused partner hears so (docs/operations.md). */
export const REFUSAL_PAUSE_MS = 250;
