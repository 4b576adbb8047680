import { initTRPC } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { authenticate, requireScope } from './auth/authenticate';
import type { Scope } from './auth/scopes';
import type { RequestContext } from './context';
import { errorBodyFor } from './http/error-response';
import type { ErrorCode } from './http/errors';

export interface ProcedureMeta extends OpenApiMeta {
  /** The status a successful call answers with, when not 200; also written into the OpenAPI document. */
  successStatus?: number;
  /** Scope required by the procedure, shown in the OpenAPI document. */
  scope?: Scope | 'none';
  /** Error codes this route can answer besides the universal ones (400, 401, 403, 500, 503). */
  errors?: ErrorCode[];
}

const t = initTRPC
  .context<RequestContext>()
  .meta<ProcedureMeta>()
  .create({
    // The console's tRPC clients see the same error envelope as REST clients.
    errorFormatter: ({ shape, error, ctx }) => ({
      ...shape,
      data: { ...shape.data, stack: undefined, partner: errorBodyFor(error, ctx?.requestId ?? 'req_unknown', []).body },
    }),
  });

export const router = t.router;
export const middleware = t.middleware;
export const createCallerFactory = t.createCallerFactory;

/** No key needed (only the description document uses this). */
export const publicProcedure = t.procedure;

/** A valid, active key; no particular scope (health, sandbox fixtures and scenarios). */
export const keyProcedure = t.procedure.use(async ({ ctx, next }) => next({ ctx: { caller: await authenticate(ctx.sql, ctx.authorization) } }));

/**
 * A valid key carrying `scope`; authentication and scope are checked before the input is read.
 * One middleware, not two: every tRPC middleware level copies the call's options and context.
 */
export const scopedProcedure = (scope: Scope) =>
  t.procedure.use(async ({ ctx, next }) => {
    const caller = await authenticate(ctx.sql, ctx.authorization);
    requireScope(caller, scope);
    return next({ ctx: { caller } });
  });
