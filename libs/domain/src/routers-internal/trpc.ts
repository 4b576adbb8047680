import { initTRPC, TRPCError, type TRPC_ERROR_CODE_KEY } from '@trpc/server';
import type { Database } from '@lop/db';
import { describeInputIssues, type InputPath } from '../laboratory-operations/observation-text';
import { LaboratoryOperationError } from '../laboratory-operations/operation';
import { IllegalTransitionError } from '../orders/lifecycle';
import { withOperatorScope } from '../audit/operator-scope';

/**
 * Internal procedures for laboratory operators (admin CLI, sandbox simulator). A separate tRPC
 * instance with its own context: these procedures cannot be merged into the partner router, and
 * no partner key or REST route reaches them.
 */
export interface OperatorContext {
  db: Database;
  /**
   * Who runs the operation, for the audit trail (the admin CLI's --operator, by default the OS
   * user). Without one, operations are recorded as `unattributed`.
   */
  operator?: string;
}

const t = initTRPC.context<OperatorContext>().create();

const CODES: Record<LaboratoryOperationError['kind'], TRPC_ERROR_CODE_KEY> = { not_found: 'NOT_FOUND', conflict: 'CONFLICT', invalid: 'BAD_REQUEST' };

/**
 * A refused transition is a conflict with the current state, in the transition table's own words.
 * Refused input reads as one line naming each place, e.g. `observations[2].value: must be a string…`,
 * instead of the validator's JSON dump.
 */
const operatorErrors = t.middleware(async ({ ctx, next, path, type }) => {
  // Every change is recorded in the audit trail, in the order's own transaction (operation.ts).
  const result =
    type === 'mutation' ? await withOperatorScope({ actor: { kind: 'operator', name: ctx.operator ?? 'unattributed' }, action: `lab.${path}` }, () => next()) : await next();
  if (!result.ok) {
    const cause = result.error.cause;
    const issues = (cause as { issues?: unknown } | undefined)?.issues;
    if (result.error.code === 'BAD_REQUEST' && Array.isArray(issues)) {
      throw new TRPCError({ code: 'BAD_REQUEST', message: describeInputIssues(issues as { path: InputPath; message: string }[]), cause });
    }
    if (cause instanceof IllegalTransitionError) throw new TRPCError({ code: 'CONFLICT', message: cause.message, cause });
    if (cause instanceof LaboratoryOperationError) throw new TRPCError({ code: CODES[cause.kind], message: cause.message, cause });
  }
  return result;
});

export const internalRouter = t.router;
export const operatorProcedure = t.procedure.use(operatorErrors);
export const createOperatorCallerFactory = t.createCallerFactory;
