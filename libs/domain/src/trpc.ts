import type { ErrorCode, Scope } from '@lop/contract';
import { initTRPC } from '@trpc/server';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { guard, type GuardRules } from './guard';
import type { RateLimitPolicy, RequestContext } from './context';
import { errorBodyFor } from './http/error-response';
import { ERROR_CODES } from './http/errors';
import { readThroughReplicas } from './reads/read-routing';
import { auditRead, auditUnavailable } from './audit/read-middleware';

/** A partner procedure's contract, stated once: the guard, REST, the OpenAPI document and the console's route table all read it. */
export interface ProcedureMeta extends OpenApiMeta {
  /** The status a successful call answers with, when not 200; also written into the OpenAPI document. */
  successStatus?: number;
  /** Scope the key must carry (`none`: any valid, active key); the guard checks it and the OpenAPI document shows it. */
  scope?: Scope | 'none';
  /** Error codes this route can answer besides the universal ones (400, 401, 403, 500, 503). */
  errors?: ErrorCode[];
  /** The success body's media type when it is not the JSON envelope (the FHIR view); errors keep the envelope. */
  responseContentType?: string;
  /**
   * The budget one call spends (the guard's rate limit), so its answers carry the RateLimit-* headers
   * (`x-spends-rate-budget` in the OpenAPI document). A 429 alone does not say so: the write gate's
   * 429 (too_many_concurrent_writes) carries Retry-After only.
   */
  rateBudget?: RateLimitPolicy;
  /**
   * `replica`: a read a streaming replica may answer (DATABASE_READ_URL), under the read-your-writes
   * rule of reads/read-routing.ts. Only for procedures that write nothing; every other procedure
   * reads and writes on the primary.
   */
  reads?: 'replica';
  /**
   * An audited read (docs/audit.md): every call answered after the key was recognised leaves one
   * audit record, written on the primary before the answer is sent (audit/read-audit.ts). The
   * names are the input fields that hold the order id, the more specific resource id, and any
   * further ids kept in the record's details.
   */
  audit?: { orderId: string; resourceId?: string; details?: string[] };
}

/** The meta a partner procedure is built from: its scope is required (`none` says so outright); tRPC's meta type must keep it optional for trpc-to-openapi. */
export interface PartnerProcedureMeta extends ProcedureMeta {
  scope: Scope | 'none';
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

/** What the guard enforces for a procedure, read from its meta. */
function guardRulesOf(meta: PartnerProcedureMeta): GuardRules {
  return { scope: meta.scope === 'none' ? undefined : meta.scope, rateLimit: meta.rateBudget };
}

/**
 * A partner procedure with `meta` as its contract: the guard (authentication, door, scope, rate
 * limit) runs before the input is read, with the scope and budget the meta states. One middleware,
 * not several: every tRPC middleware level copies the call's options and context.
 */
export function partnerProcedure(meta: PartnerProcedureMeta) {
  const rules = guardRulesOf(meta);
  return t.procedure.meta(meta).use(async ({ ctx, next, path, getRawInput }) => {
    const answer = async () => {
      const caller = await guard(ctx, rules);
      // The one place reads are routed: by the procedure's kind, never per call site. The guard
      // (authentication, the key's revocation, the budget) has read the primary either way.
      if (meta.reads !== 'replica' || !ctx.replicas) return next({ ctx: { caller } });
      return readThroughReplicas(
        ctx.replicas,
        caller,
        (replica) => next({ ctx: replica ? { caller, db: replica.db, sql: replica.sql, primary: ctx.db } : { caller } }),
        (result) => (result.ok ? undefined : result.error),
      );
    };
    if (!meta.audit) return answer();
    // The one place reads are audited: the answer, data or refusal, is held until its record is
    // committed on the primary; a record that cannot be written turns the answer into a 503.
    let result: Awaited<ReturnType<typeof answer>>;
    try {
      result = await answer();
    } catch (error) {
      await auditRead(ctx, meta, path, getRawInput, { ok: false, error }).catch((auditError: unknown) => {
        throw auditUnavailable(auditError);
      });
      throw error;
    }
    await auditRead(ctx, meta, path, getRawInput, result).catch((auditError: unknown) => {
      throw auditUnavailable(auditError);
    });
    return result;
  });
}
