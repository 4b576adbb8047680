import type { LifecycleDetail } from '@lop/contract';
import { and, eq } from 'drizzle-orm';
import { orders, sandboxScenarioProgress, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { notFound } from '../http/errors';
import { orderProgramGranted } from '../programs/programs';
import { SCENARIOS } from '../sandbox/scenarios';
import { scenarioRefusal } from '../sandbox/simulate';
import type { ConsoleOrderScenarios } from './console.schemas';

/**
 * Where an order stands in every sandbox scenario, from the server's own progress records: an
 * order opened in a new tab (or moved by a partner's own simulate calls) shows the steps already
 * applied, and only scenarios whose next step can run from the order's state are available, by
 * the very rule simulate applies.
 */
export async function orderScenarioProgress(db: Database, caller: Caller, orderId: string): Promise<ConsoleOrderScenarios> {
  const [order] = await db
    .select({ id: orders.id, detail: orders.lifecycleDetail })
    .from(orders)
    .where(and(eq(orders.id, orderId), eq(orders.laboratoryId, caller.laboratoryId), eq(orders.clientId, caller.clientId), eq(orders.environment, caller.environment), orderProgramGranted()));
  if (!order) throw notFound('order');
  const current = order.detail as LifecycleDetail;
  const progress = await db.select().from(sandboxScenarioProgress).where(eq(sandboxScenarioProgress.orderId, order.id));

  return {
    order_id: order.id,
    lifecycle_detail: current,
    scenarios: SCENARIOS.map((plan) => {
      const record = progress.find((p) => p.scenario === plan.scenario);
      const done = Math.min(record?.stepsApplied ?? 0, plan.planned.length);
      const refusal = scenarioRefusal(plan, done, current);
      return {
        scenario: plan.scenario,
        description: plan.description,
        steps: plan.planned.length,
        steps_applied: done,
        status: done === 0 ? 'not_started' : done >= plan.planned.length ? 'completed' : 'in_progress',
        available: refusal === null,
        refusal: refusal?.message ?? null,
        last_applied_at: record?.updatedAt.toISOString() ?? null,
        step_details: plan.planned.map((p, i) => ({
          step: i + 1,
          name: p.step.name,
          description: p.step.description,
          requires_lifecycle_detail: p.from,
          leads_to: p.to,
          events: p.events,
          applied: i < done,
        })),
      };
    }),
  };
}
