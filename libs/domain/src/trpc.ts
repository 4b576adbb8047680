import { initTRPC } from '@trpc/server';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { guard, type GuardRules } from './auth/guard';
import type { Scope } from './auth/scopes';
import type { RequestContext } from './context';
import { errorBodyFor } from './http/error-response';
import { ERROR_CODES, type ErrorCode } from './http/errors';

export interface ProcedureMeta extends OpenApiMeta {
  /** The status a successful call answers with, when not 200; also written into the OpenAPI document. */
  successStatus?: number;
  /** Scope required by the procedure, shown in the OpenAPI document. */
  scope?: Scope | 'none';
  /** Error codes this route can answer besides the universal ones (400, 401, 403, 500, 503). */
  errors?: ErrorCode[];
  /** The success body's media type when it is not the JSON envelope (the FHIR view); errors keep the envelope. */
  responseContentType?: string;
  /**
   * The route spends a rate budget (its guard rule `rateLimit`), so its answers carry the RateLimit-*
   * headers. A 429 alone does not say so: the write gate's 429 (too_many_concurrent_writes) carries Retry-After only.
   */
  spendsRateBudget?: boolean;
}

const t = initTRPC
  .context<RequestContext>()
  .meta<ProcedureMeta>()
  .create({
    // The console's tRPC door answers like REST: the same status, code and sentence (never a
    // driver message or an address), with the REST envelope in data.partner.
    errorFormatter: ({ shape, error, ctx }) => {
      const response = errorBodyFor(error, ctx?.requestId ?? 'req_unknown', []);
      const trpcCode = ERROR_CODES[response.body.error.code].trpc;
      return {
        ...shape,
        code: TRPC_ERROR_CODES_BY_KEY[trpcCode],
        message: response.body.error.message,
        data: { ...shape.data, code: trpcCode, httpStatus: response.status, stack: undefined, partner: response.body },
      };
    },
  });

export const router = t.router;
export const middleware = t.middleware;
export const createCallerFactory = t.createCallerFactory;

/** No key needed (only the description document uses this). */
export const publicProcedure = t.procedure;

/** A valid, active key; no particular scope (health, sandbox fixtures and scenarios). */
export const keyProcedure = t.procedure.use(async ({ ctx, next }) => next({ ctx: { caller: await guard(ctx, {}) } }));

/**
 * A valid key carrying `scope`; the guard (authentication, door, scope, rate limit) runs before the
 * input is read. One middleware, not several: every tRPC middleware level copies the call's options and context.
 */
export const scopedProcedure = (scope: Scope, rules: Omit<GuardRules, 'scope'> = {}) =>
  t.procedure.use(async ({ ctx, next }) => next({ ctx: { caller: await guard(ctx, { ...rules, scope }) } }));
