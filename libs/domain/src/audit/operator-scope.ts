import { AsyncLocalStorage } from 'node:async_hooks';
import type { Transaction } from '@lop/db';
import { recordControlAction, type ControlActor } from './record';

/** The laboratory operation being run through the internal router, and by whom. */
export interface OperatorScope {
  actor: ControlActor;
  /** e.g. `lab.releaseResult`. */
  action: string;
}

const scopes = new AsyncLocalStorage<OperatorScope>();

/** Runs `work` as `scope`'s operation: the order transactions it opens record it (operation.ts). */
export function withOperatorScope<T>(scope: OperatorScope, work: () => Promise<T>): Promise<T> {
  return scopes.run(scope, work);
}

/**
 * Records the laboratory operation in scope, if any, in the order's transaction. Operations run by
 * the internal router (the admin CLI) always have one; the sandbox's own simulation, which a
 * partner's sandbox call starts, has none and is not a control-plane action.
 */
export async function recordOperatorAction(tx: Transaction, order: { id: string; laboratoryId: string; clientId: string; environment: 'sandbox' | 'production' }): Promise<void> {
  const scope = scopes.getStore();
  if (!scope) return;
  await recordControlAction(tx, scope.actor, {
    action: scope.action,
    laboratoryId: order.laboratoryId,
    clientId: order.clientId,
    environment: order.environment,
    orderId: order.id,
  });
}
