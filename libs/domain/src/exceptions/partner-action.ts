import { eq, getTableName, inArray, sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { orderExceptions, orders, type Database } from '@lop/db';
import type { NextAction } from '@lop/contract';
import { EXCEPTION_CATEGORIES, type ExceptionCategory } from './exceptions.schemas';

/*
 * Which exception decides an order's next_action, stated once. While the partner owns an open
 * exception of the order, the newest one (opened_at, then id) decides what the partner must do;
 * laboratory-owned ones never do. GET order, the console's order list, every event that carries
 * next_action, the sandbox's simulate response and `action_required_code` all read it through
 * this module: the SQL below finds the exception, PartnerAction carries what it found, and
 * nextActionOf turns it into a next_action.
 */

/**
 * What the partner must act on: nothing, or the newest open exception it owns, by category. The
 * category is the stored text, not narrowed to ExceptionCategory: a row written by another release
 * may name one this release lacks (nextActionOf asks `resolve_exception` for it).
 */
export type PartnerAction = { readonly kind: 'none' } | { readonly kind: 'open_exception'; readonly category: string };

export const NO_PARTNER_ACTION: PartnerAction = Object.freeze({ kind: 'none' });

/** The PartnerAction a category read by openPartnerExceptionCategory stands for (null: nothing open). */
export const partnerActionFrom = (category: string | null): PartnerAction => (category === null ? NO_PARTNER_ACTION : { kind: 'open_exception', category });

/** How events publish it in `action_required_code`: the category, or `none`. */
export const actionRequiredCodeOf = (action: PartnerAction): string => (action.kind === 'none' ? 'none' : action.category);

export const samePartnerAction = (a: PartnerAction, b: PartnerAction): boolean => a.kind === b.kind && actionRequiredCodeOf(a) === actionRequiredCodeOf(b);

/**
 * The order's next_action: the one its state gives, unless the partner owns an open exception;
 * then the one that exception's category asks (its policy row's partner_next_action), since the
 * state's would say "wait" while the partner is the one holding the order up.
 */
export function nextActionOf(stateNextAction: NextAction, action: PartnerAction): NextAction {
  if (action.kind === 'none') return stateNextAction;
  return Object.hasOwn(EXCEPTION_CATEGORIES, action.category) ? EXCEPTION_CATEGORIES[action.category as ExceptionCategory].partner_next_action : 'resolve_exception';
}

/**
 * The SQL of the rule: a scalar subquery, the category of the newest open exception the partner
 * owns on the order `orderId` names, or null. Correlated on the column, so it fits in any select
 * over orders (a prepared one too: it has no parameters) and costs one lookup of
 * order_exceptions_order_idx per order. The column is written out qualified: inside a single-table
 * select drizzle renders a column bare, and a bare "id" here would mean the exception's own.
 */
export function openPartnerExceptionCategory(orderId: AnyPgColumn): SQL<string | null> {
  const column = sql`${sql.identifier(getTableName(orderId.table))}.${sql.identifier(orderId.name)}`;
  return sql<string | null>`(select e.category from ${orderExceptions} e where e.order_id = ${column} and e.status = 'open' and e.owner_role = 'partner' order by e.opened_at desc, e.id desc limit 1)`;
}

type Reader = Pick<Database, 'select'>;

/** The order's PartnerAction, in one query (NO_PARTNER_ACTION for an order that does not exist). */
export async function partnerActionOf(db: Reader, orderId: string): Promise<PartnerAction> {
  const [row] = await db
    .select({ category: openPartnerExceptionCategory(orders.id) })
    .from(orders)
    .where(eq(orders.id, orderId));
  return partnerActionFrom(row?.category ?? null);
}

/** partnerActionOf of several orders in one query; every order asked for is in the map. */
export async function partnerActionsOf(db: Reader, orderIds: string[]): Promise<Map<string, PartnerAction>> {
  const actions = new Map<string, PartnerAction>(orderIds.map((id) => [id, NO_PARTNER_ACTION]));
  if (orderIds.length === 0) return actions;
  const rows = await db
    .select({ orderId: orders.id, category: openPartnerExceptionCategory(orders.id) })
    .from(orders)
    .where(inArray(orders.id, orderIds));
  for (const row of rows) actions.set(row.orderId, partnerActionFrom(row.category));
  return actions;
}
