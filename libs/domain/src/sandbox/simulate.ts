import type { EventType, LifecycleDetail } from '@lop/contract';
import { and, eq } from 'drizzle-orm';
import { orders, sandboxScenarioProgress, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { notFound, PartnerError } from '../http/errors';
import { LaboratoryOperationError } from '../laboratory-operations/operation';
import { openPartnerExceptionCategory, partnerActionFrom } from '../exceptions/partner-action';
import { describeState, IllegalTransitionError } from '../orders/lifecycle';
import { lockOrder } from '../orders/state-change';
import type { SimulationResult } from './sandbox.schemas';
import { findScenario, type ScenarioPlan } from './scenarios';
import { runStep } from './step-operations';

const notAllowed = (issue: string, message: string) => new PartnerError('simulation_not_allowed', message, { details: [{ issue, message }] });

/**
 * Why the scenario cannot take its next step on this order, in words an engineer can act on; null
 * when it can. The console's scenario runner offers exactly the scenarios this allows.
 */
export function scenarioRefusal(plan: ScenarioPlan, done: number, current: LifecycleDetail): { issue: 'scenario_completed' | 'scenario_not_applicable'; message: string } | null {
  const total = plan.planned.length;
  if (done >= total) {
    return {
      issue: 'scenario_completed',
      message: `The scenario ${plan.scenario} has already run all ${total} steps on this order (it is now ${current}). Create a new sandbox order to run it again.`,
    };
  }
  const next = plan.planned[done];
  if (current === next.from) return null;
  return {
    issue: 'scenario_not_applicable',
    message:
      done === 0
        ? `The scenario ${plan.scenario} starts from a newly created order (lifecycle_detail ${next.from}); this order is ${current}. Create a new sandbox order to run it.`
        : `The next step of ${plan.scenario} (step ${done + 1} of ${total}, ${next.step.name}) needs an order in state ${next.from}; this order is ${current}, so the scenario cannot continue.`,
  };
}

function checkApplicable(plan: ScenarioPlan, done: number, current: LifecycleDetail): void {
  const refusal = scenarioRefusal(plan, done, current);
  if (refusal) throw notAllowed(refusal.issue, refusal.message);
}

/**
 * POST /v1/sandbox/orders/{orderId}/simulate: applies the scenario's next steps (all remaining, or
 * `steps` of them) through the laboratory operations a real laboratory update uses. The steps,
 * their events and the progress record commit in one transaction: all of them or none.
 */
export async function simulateScenario(db: Database, caller: Caller, input: { orderId: string; scenario: string; steps?: number }): Promise<SimulationResult> {
  if (caller.environment !== 'sandbox') {
    throw notAllowed('production_key', 'Simulation needs a sandbox key; production orders move only through the laboratory.');
  }
  const plan = findScenario(input.scenario);
  if (!plan) throw new PartnerError('invalid_request', 'No scenario has this name; GET /v1/sandbox/scenarios lists them.', { details: [{ field: 'scenario', issue: 'invalid_value' }] });

  return db.transaction(async (tx) => {
    const order = await lockOrder(tx, input.orderId, { clientId: caller.clientId, environment: caller.environment, laboratoryId: caller.laboratoryId });
    if (!order) throw notFound('order');
    if (!order.synthetic) throw notAllowed('order_not_synthetic', 'Only synthetic orders can be simulated.');

    const progressKey = and(eq(sandboxScenarioProgress.orderId, order.id), eq(sandboxScenarioProgress.scenario, plan.scenario));
    const [progress] = await tx.select().from(sandboxScenarioProgress).where(progressKey);
    const done = progress?.stepsApplied ?? 0;
    checkApplicable(plan, done, order.lifecycleDetail as LifecycleDetail);

    const count = Math.min(input.steps ?? Infinity, plan.planned.length - done);
    // The operations open their own transactions; on `tx` those are savepoints inside this one.
    const operations = tx as unknown as Database;
    const applied: SimulationResult['applied_steps'] = [];
    const emitted: EventType[] = [];
    for (let i = done; i < done + count; i++) {
      const { step } = plan.planned[i];
      const outcome = await runStep({ db: operations, order }, step).catch((error: unknown) => {
        if (error instanceof IllegalTransitionError || error instanceof LaboratoryOperationError) {
          throw notAllowed('scenario_not_applicable', `Step ${i + 1} of ${plan.scenario} (${step.name}) cannot apply to this order: ${error.message}.`);
        }
        throw error;
      });
      const types = outcome.events.map((e) => e.type);
      applied.push({ step: i + 1, name: step.name, events: types });
      emitted.push(...types);
    }

    const now = new Date();
    await tx
      .insert(sandboxScenarioProgress)
      .values({ orderId: order.id, scenario: plan.scenario, stepsApplied: done + count, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({ target: [sandboxScenarioProgress.orderId, sandboxScenarioProgress.scenario], set: { stepsApplied: done + count, updatedAt: now } });
    const [current] = await tx
      .select({ detail: orders.lifecycleDetail, partnerExceptionCategory: openPartnerExceptionCategory(orders.id) })
      .from(orders)
      .where(eq(orders.id, order.id));

    return {
      order_id: order.id,
      scenario: plan.scenario,
      events_emitted: emitted.length,
      event_types: emitted,
      steps_applied: count,
      steps_completed: done + count,
      steps_remaining: plan.planned.length - done - count,
      applied_steps: applied,
      ...describeState(current.detail as LifecycleDetail, partnerActionFrom(current.partnerExceptionCategory)),
    };
  });
}
