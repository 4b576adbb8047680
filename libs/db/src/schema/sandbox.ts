import { integer, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { createdAt } from './common';
import { orders } from './orders';

/**
 * How far each sandbox scenario has advanced a synthetic order, so an engineer can walk an order
 * one step at a time. Written in the same transaction as the steps it counts, so it never
 * disagrees with the order and its events.
 */
export const sandboxScenarioProgress = pgTable(
  'sandbox_scenario_progress',
  {
    orderId: uuid('order_id')
      .notNull()
      .references(() => orders.id),
    scenario: text('scenario').notNull(),
    stepsApplied: integer('steps_applied').notNull(),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.orderId, t.scenario] })],
);
