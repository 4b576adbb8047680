import { type Lifecycle, LIFECYCLE_DETAILS, type LifecycleDetail } from '@lop/contract';
import { and, desc, eq, ilike, inArray, sql } from 'drizzle-orm';
import { catalogItems, orders, programs, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { cursorCodec, rowIdPosition } from '../http/cursor';
import { PartnerError } from '../http/errors';
import { openPartnerExceptionCategory, partnerActionFrom } from '../exceptions/partner-action';
import { specimensOf, toOrderResource } from '../orders/order-resource';
import { orderProgramGranted } from '../programs/programs';
import type { DataProtector } from '../security/protector';
import type { ConsoleOrderPage } from './console.schemas';

/**
 * The console's order list: the caller's orders, newest first. Not a partner REST route — the
 * spec has no order listing — but filtered exactly like one (laboratory, client, environment).
 */

export const ORDER_LIST_DEFAULT_LIMIT = 25;
export const ORDER_LIST_MAX_LIMIT = 100;

const invalidCursor = () =>
  new PartnerError('invalid_request', 'The cursor is not valid; use the cursor of a previous page, or omit it to start from the newest order.', {
    details: [{ field: 'cursor', issue: 'invalid_cursor' }],
  });

/** Opaque to the console: the last order of a page, bound to the caller's order list (http/cursor.ts). */
const orderCursor = cursorCodec({ purpose: 'partner-service/console-order-cursor', version: 1, position: rowIdPosition });
const orderListOf = (caller: Caller) => `${caller.laboratoryId}:${caller.clientId}:${caller.environment}`;

function decodeOrderCursor(protector: DataProtector, caller: Caller, cursor: string): string {
  const decoded = orderCursor.decode(protector, orderListOf(caller), cursor);
  if (!decoded.ok) throw invalidCursor();
  return decoded.position;
}

export interface ConsoleOrderFilter {
  cursor?: string;
  limit?: number;
  /** Part of the external_order_id, any case: what a reader remembers of an order. */
  external_order_id?: string;
  lifecycle?: Lifecycle;
}

/** LIKE treats % and _ as wildcards; a reader searching for "ord_1" means the underscore. */
const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

const detailsOf = (lifecycle: Lifecycle) => (Object.keys(LIFECYCLE_DETAILS) as LifecycleDetail[]).filter((d) => LIFECYCLE_DETAILS[d].lifecycle === lifecycle);

export async function listConsoleOrders(db: Database, protector: DataProtector, caller: Caller, input: ConsoleOrderFilter): Promise<ConsoleOrderPage> {
  const limit = input.limit ?? ORDER_LIST_DEFAULT_LIMIT;
  // The cursor is checked against the same filter: a page continues the list it came from.
  const tenancy = and(
    eq(orders.laboratoryId, caller.laboratoryId),
    eq(orders.clientId, caller.clientId),
    eq(orders.environment, caller.environment),
    orderProgramGranted(),
    input.external_order_id ? ilike(orders.externalOrderId, `%${escapeLike(input.external_order_id)}%`) : undefined,
    input.lifecycle ? inArray(orders.lifecycleDetail, detailsOf(input.lifecycle)) : undefined,
  );

  let after;
  if (input.cursor !== undefined) {
    const afterId = decodeOrderCursor(protector, caller, input.cursor);
    const [found] = await db.select({ id: orders.id }).from(orders).where(and(tenancy, eq(orders.id, afterId)));
    if (!found) throw invalidCursor();
    // Compared in SQL: created_at keeps microseconds that a JavaScript Date would round away.
    after = sql`(${orders.createdAt}, ${orders.id}) < (select o.created_at, o.id from orders o where o.id = ${afterId})`;
  }

  const rows = await db
    .select({
      order: orders,
      programName: programs.name,
      itemName: catalogItems.name,
      itemCode: catalogItems.code,
      // The current (highest released) version decides: a critical value corrected later is no longer critical.
      critical: sql<boolean>`coalesce((select rv.is_critical from result_versions rv where rv.order_id = ${orders.id} and rv.status = 'released' order by rv.version desc limit 1), false)`,
      // next_action as GET order states it (exceptions/partner-action.ts).
      partnerExceptionCategory: openPartnerExceptionCategory(orders.id),
    })
    .from(orders)
    .innerJoin(programs, eq(programs.id, orders.programId))
    .innerJoin(catalogItems, eq(catalogItems.id, orders.itemId))
    .where(and(tenancy, after))
    .orderBy(desc(orders.createdAt), desc(orders.id))
    .limit(limit + 1);

  const page = rows.slice(0, limit);
  const specimens = await specimensOf(
    db,
    page.map((r) => r.order.id),
  );
  const hasMore = rows.length > limit;
  return {
    orders: page.map((r) => ({
      ...toOrderResource(r.order, specimens.get(r.order.id)!, partnerActionFrom(r.partnerExceptionCategory)),
      program_name: r.programName,
      item_name: r.itemName,
      item_code: r.itemCode,
      critical_result: r.critical,
    })),
    next_cursor: hasMore ? orderCursor.encode(protector, orderListOf(caller), page[page.length - 1].order.id) : null,
  };
}
