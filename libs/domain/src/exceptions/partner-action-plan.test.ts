import { eq, inArray } from 'drizzle-orm';
import { orders } from '@lop/db';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../auth/authenticate';
import { getOrder } from '../orders/orders';
import { newOrder, ownTestDatabase } from '../../testing/orders';
import { openPartnerExceptionCategory } from './partner-action';

/**
 * The SQL of the rule costs an index lookup per order, in each query that reads it. On a database
 * of this file's own: it fills and analyzes order_exceptions, so the planner has a real choice.
 */
const connection = ownTestDatabase('partner-action-plan', { max: 1 });

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

async function plan(query: string, params: unknown[]): Promise<PlanNode[]> {
  const [{ 'QUERY PLAN': [{ Plan: root }] }] = await connection.sql.unsafe(`explain (format json) ${query}`, params as never[]);
  const nodes: PlanNode[] = [];
  const walk = (node: PlanNode) => {
    nodes.push(node);
    node.Plans?.forEach(walk);
  };
  walk(root);
  return nodes;
}

/** order_exceptions is read through its index on order_id (an index or bitmap scan), never scanned whole. */
function expectIndexLookup(nodes: PlanNode[]) {
  const where = JSON.stringify(nodes.map((n) => [n['Node Type'], n['Relation Name'] ?? n['Index Name'] ?? null]));
  expect(nodes.filter((n) => n['Relation Name'] === 'order_exceptions' && !/Index|Bitmap Heap/.test(n['Node Type'])), where).toEqual([]);
  expect(nodes.filter((n) => n['Index Name'] === 'order_exceptions_order_idx').map((n) => n['Node Type']), where).toEqual([expect.stringMatching(/^(Index|Index Only|Bitmap Index) Scan$/)]);
}

let order: typeof orders.$inferSelect;
let orderIds: string[];

beforeAll(async () => {
  const db = connection.db;
  order = (await newOrder(db)).order;
  // 3000 orders of the same tenant, three exceptions each (one open and partner-owned).
  await connection.sql`
    insert into orders
    select (jsonb_populate_record(null::orders, to_jsonb(o) || jsonb_build_object('id', gen_random_uuid(), 'external_order_id', o.external_order_id || '-' || g))).*
    from orders o, generate_series(1, 3000) g where o.id = ${order.id}`;
  await connection.sql`
    insert into order_exceptions (order_id, category, severity, status, owner_role, entity_type, opened_at)
    select o.id, c.category, 'error', c.status, c.owner_role, 'order', now() - c.age * interval '1 minute'
    from orders o, (values ('order_rejected', 'resolved', 'partner', 3), ('specimen_rejected', 'open', 'partner', 2), ('result_delayed', 'open', 'laboratory', 1)) c(category, status, owner_role, age)`;
  await connection.sql`analyze orders, order_exceptions`;
  orderIds = (await db.select({ id: orders.id }).from(orders).limit(20)).map((r) => r.id);
});

describe('the SQL of the rule: an index lookup per order', () => {
  it('one order, as partnerActionOf reads it', async () => {
    const query = connection.db.select({ category: openPartnerExceptionCategory(orders.id) }).from(orders).where(eq(orders.id, order.id)).toSQL();
    expectIndexLookup(await plan(query.sql, query.params));
  });

  it('many orders, as partnerActionsOf and the console order list read them', async () => {
    const query = connection.db
      .select({ orderId: orders.id, category: openPartnerExceptionCategory(orders.id) })
      .from(orders)
      .where(inArray(orders.id, orderIds))
      .toSQL();
    expectIndexLookup(await plan(query.sql, query.params));
  });

  it('GET order: still a named prepared statement, and its plan reads the index', async () => {
    const caller = { clientId: order.clientId, laboratoryId: order.laboratoryId, environment: order.environment } as Caller;
    expect((await getOrder(connection.db, caller, order.id)).next_action).toBe('recollect_specimen');
    // One connection (max 1), so the statement getOrder prepared is this session's.
    const prepared = await connection.sql<{ statement: string }[]>`select statement from pg_prepared_statements where statement like '%json_agg%order_exceptions%' and statement not like '%pg_prepared_statements%'`;
    expect(prepared).toHaveLength(1);
    const params = [order.id, order.clientId, order.environment, order.laboratoryId];
    expectIndexLookup(await plan(prepared[0].statement, params));
  });
});

