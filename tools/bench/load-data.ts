import { randomBytes } from 'node:crypto';
import { subjects, type DatabaseConnection, type Sql } from '@lop/db';
import { authenticate, createOrder, DataProtector, demoId, seedDemo, simulateScenario, type Caller } from '@lop/domain';

/**
 * Realistic data for the benchmark, loaded fast. A few template orders are placed and driven to
 * released results through the real domain functions (createOrder, then the sandbox simulator,
 * which applies the laboratory operations); every other order is a set-based SQL copy of a
 * template with fresh identifiers. So every row and event payload has exactly the shape the
 * domain writes, and 10,000 orders load in seconds instead of 80,000 transactions.
 */

export const BENCH_PROGRAM_ID = demoId('program:wellness-sbx');
export const BENCH_ITEM_ID = demoId('item:wellness-sbx:CBC');
export const BENCH_SUBJECT = 'bench-subject-0001';
/** Scenarios the templates go through: results released as final, partial then final, corrected, critical. */
const TEMPLATE_SCENARIOS = ['happy_path', 'partial_then_final', 'corrected_result', 'critical_result'];

export interface BenchData {
  key: string;
  caller: Caller;
  /** Every order id of the bench client (templates and copies). */
  orderIds: string[];
  eventCount: number;
  programId: string;
  itemId: string;
  subject: string;
}

/** Seeds the demo laboratory and loads `orders` orders (with specimens, released results and events) for the demo client. */
export async function loadBenchData(database: DatabaseConnection, options: { orders: number; log?: (line: string) => void }): Promise<BenchData> {
  const log = options.log ?? (() => undefined);
  const { db, sql } = database;
  const demo = await seedDemo(db);
  const caller = await authenticate(sql, `Bearer ${demo.sandbox_key}`);
  const protector = new DataProtector(randomBytes(32));
  await db.insert(subjects).values({ clientId: caller.clientId, environment: caller.environment, externalSubjectId: BENCH_SUBJECT }).onConflictDoNothing();

  const templates: string[] = [];
  for (const [i, scenario] of TEMPLATE_SCENARIOS.entries()) {
    const order = await db.transaction((tx) =>
      createOrder(tx, protector, caller, {
        external_order_id: `bench-template-${i}-${randomBytes(4).toString('hex')}`,
        program_id: BENCH_PROGRAM_ID,
        item_id: BENCH_ITEM_ID,
        external_subject_id: BENCH_SUBJECT,
        collection: 'in_person_draw',
        region: 'US-CA',
      } as Parameters<typeof createOrder>[3]),
    );
    await simulateScenario(db, caller, { orderId: order.order_id, scenario });
    templates.push(order.order_id);
  }
  log(`templates: ${templates.length} orders driven through ${TEMPLATE_SCENARIOS.join(', ')}`);

  const copies = Math.max(0, options.orders - templates.length);
  const rounds = Math.ceil(copies / templates.length);
  const started = Date.now();
  // One round = one copy of every template; a transaction per batch of rounds keeps each statement bounded.
  const batch = 500;
  for (let first = 1; first <= rounds; first += batch) {
    const last = Math.min(rounds, first + batch - 1);
    await sql.begin((tx) => copyTemplates(tx as unknown as Sql, caller, templates, first, last, copies));
    log(`copied ${Math.min(copies, last * templates.length)} / ${copies} orders`);
  }
  const orderIds = (await sql<{ id: string }[]>`select id from orders where client_id = ${caller.clientId} and environment = ${caller.environment}`).map((r) => r.id);
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from events where client_id = ${caller.clientId} and environment = ${caller.environment}`;
  await sql`analyze orders; analyze specimens; analyze result_versions; analyze events`.simple();
  log(`loaded ${orderIds.length} orders and ${n} events in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { key: demo.sandbox_key, caller, orderIds, eventCount: n, programId: BENCH_PROGRAM_ID, itemId: BENCH_ITEM_ID, subject: BENCH_SUBJECT };
}

/**
 * Copies rounds [first, last] of the templates. Identifiers inside event payloads (order id,
 * result ids, external_order_id, links) are rewritten by text replacement of the template's
 * values, which are uuids or unique strings. Sequences continue the stream densely, in round order.
 */
async function copyTemplates(tx: Sql, caller: Caller, templates: string[], first: number, last: number, copies: number): Promise<void> {
  await tx`
    create temporary table bench_copy on commit drop as
    select t.order_id as template_id, r.round, t.position, gen_random_uuid() as new_id,
           'bench-' || r.round || '-' || t.position as new_external_id
    from unnest(${templates}::uuid[]) with ordinality as t(order_id, position)
    cross join generate_series(${first}::int, ${last}::int) as r(round)
    where (r.round - 1) * ${templates.length} + t.position <= ${copies}`;
  await tx`
    create temporary table bench_result_copy on commit drop as
    select rv.id as template_result_id, c.round, c.position, gen_random_uuid() as new_result_id
    from result_versions rv join bench_copy c on c.template_id = rv.order_id`;

  const orderColumns = await columnsOf(tx, 'orders');
  const override: Record<string, string> = {
    id: 'c.new_id',
    external_order_id: 'c.new_external_id',
    created_at: `o.created_at + c.round * interval '1 second'`,
    updated_at: `o.updated_at + c.round * interval '1 second'`,
  };
  await tx.unsafe(`
    insert into orders (${orderColumns.join(', ')})
    select ${orderColumns.map((col) => override[col] ?? `o.${col}`).join(', ')}
    from orders o join bench_copy c on c.template_id = o.id`);

  const specimenColumns = await columnsOf(tx, 'specimens');
  const specimenOverride: Record<string, string> = { id: 'gen_random_uuid()', order_id: 'c.new_id' };
  await tx.unsafe(`
    insert into specimens (${specimenColumns.join(', ')})
    select ${specimenColumns.map((col) => specimenOverride[col] ?? `s.${col}`).join(', ')}
    from specimens s join bench_copy c on c.template_id = s.order_id`);

  const resultColumns = await columnsOf(tx, 'result_versions');
  const resultOverride: Record<string, string> = {
    id: 'rc.new_result_id',
    order_id: 'c.new_id',
    supersedes_result_id: 'sup.new_result_id',
    source_result_id: `rv.source_result_id || '-' || c.round`,
  };
  await tx.unsafe(`
    insert into result_versions (${resultColumns.join(', ')})
    select ${resultColumns.map((col) => resultOverride[col] ?? `rv.${col}`).join(', ')}
    from result_versions rv
    join bench_copy c on c.template_id = rv.order_id
    join bench_result_copy rc on rc.template_result_id = rv.id and rc.round = c.round
    left join bench_result_copy sup on sup.template_result_id = rv.supersedes_result_id and sup.round = c.round`);

  // Template events in stream order; each round appends all of them once more after the stream's end.
  const [{ last_sequence: base }] = await tx<{ last_sequence: number }[]>`
    select last_sequence::int from event_streams where client_id = ${caller.clientId} and environment = ${caller.environment} for update`;
  await tx`
    create temporary table bench_event_template on commit drop as
    select e.*, row_number() over (order by c_pos.position, e.sequence) as template_rank
    from events e join unnest(${templates}::uuid[]) with ordinality as c_pos(order_id, position) on c_pos.order_id = e.order_id
    where e.client_id = ${caller.clientId} and e.environment = ${caller.environment}`;
  const eventColumns = await columnsOf(tx, 'events');
  const eventOverride: Record<string, string> = {
    id: 'gen_random_uuid()',
    order_id: 'c.new_id',
    occurred_at: `e.occurred_at + c.round * interval '1 second'`,
    created_at: `e.created_at + c.round * interval '1 second'`,
    data: 'bench_rewrite(e.data, c.round, e.order_id, c.new_id, c.new_external_id)',
    sequence: `${base} + row_number() over (order by c.round, e.template_rank)`,
  };
  await tx.unsafe(`
    create or replace function pg_temp.bench_rewrite_results(doc text, round int) returns text language plpgsql as $$
    declare r record;
    begin
      for r in select template_result_id, new_result_id from bench_result_copy where bench_result_copy.round = bench_rewrite_results.round loop
        doc := replace(doc, r.template_result_id::text, r.new_result_id::text);
      end loop;
      return doc;
    end $$`);
  await tx.unsafe(`
    create or replace function pg_temp.bench_rewrite(data jsonb, round int, template_id uuid, new_id uuid, new_external_id text) returns jsonb language sql as $$
      select pg_temp.bench_rewrite_results(
        replace(jsonb_set(data, '{external_order_id}', to_jsonb(new_external_id))::text, template_id::text, new_id::text), round)::jsonb
    $$`);
  await tx.unsafe(`
    insert into events (${eventColumns.join(', ')})
    select ${eventColumns.map((col) => (col === 'data' ? 'pg_temp.' + eventOverride.data : (eventOverride[col] ?? `e.${col}`))).join(', ')}
    from bench_event_template e join bench_copy c on c.template_id = e.order_id`);
  await tx`
    update event_streams set last_sequence = (select max(sequence) from events where client_id = ${caller.clientId} and environment = ${caller.environment})
    where client_id = ${caller.clientId} and environment = ${caller.environment}`;
}

async function columnsOf(tx: Sql, table: string): Promise<string[]> {
  const rows = await tx<{ column_name: string }[]>`
    select column_name from information_schema.columns where table_schema = 'public' and table_name = ${table} order by ordinal_position`;
  return rows.map((r) => `"${r.column_name}"`.replace(/"/g, ''));
}
