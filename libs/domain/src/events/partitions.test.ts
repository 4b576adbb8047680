import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { apiClients, detachPartitionsBefore, laboratories, listPartitions } from '@lop/db';
import { ownTestDatabase } from '../../testing/orders';
import type { Caller } from '../auth/authenticate';
import { runMaintenancePass } from '../retention/maintenance-job';
import { DataProtector } from '../security/protector';
import { EVENTS_MONTHS_AHEAD, ensureEventPartitions } from './partitions';
import { readEvents } from './stream';

/**
 * events' monthly partitions, on a database of this file's own: it detaches partitions, which no
 * other file's rows may be in.
 */
const connection = ownTestDatabase('event-partitions');

const protector = new DataProtector(randomBytes(32));
const utc = (iso: string) => new Date(`${iso}T00:00:00Z`);
const monthsAfter = (at: Date, months: number) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1));

async function newClient(): Promise<Caller> {
  const [lab] = await connection.db.insert(laboratories).values({ displayName: `Lab ${randomBytes(3).toString('hex')}`, legalName: 'Lab, Inc.', operatingName: 'Lab' }).returning();
  const [client] = await connection.db.insert(apiClients).values({ laboratoryId: lab.id, name: `Client ${randomBytes(3).toString('hex')}` }).returning();
  return { clientId: client.id, environment: 'sandbox' } as Caller;
}

/** `count` events of the caller's stream after `after`, created from `from` one `stepSeconds` apart (body: the partner JSON, as append writes it). */
async function writeEvents(caller: Caller, after: number, count: number, from: Date, stepSeconds: number): Promise<void> {
  await connection.sql`
    insert into events (id, client_id, environment, sequence, type, version, occurred_at, data, body, created_at)
    select id, ${caller.clientId}, 'sandbox', ${after} + g, 'order.updated', 1, at, '{}'::jsonb,
           json_build_object('event_id', id, 'sequence', ${after} + g)::text, at
    from (select g, gen_random_uuid() as id, ${from.toISOString()}::timestamptz + (g - 1) * ${stepSeconds} * interval '1 second' as at
          from generate_series(1, ${count}::int) g) e`;
  await connection.sql`
    insert into event_streams (client_id, environment, last_sequence) values (${caller.clientId}, 'sandbox', ${after + count})
    on conflict (client_id, environment) do update set last_sequence = excluded.last_sequence`;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Plan Rows': number;
  Plans?: PlanNode[];
}

async function readAll(caller: Caller, limit: number) {
  const sequences: number[] = [];
  const cursors: string[] = [];
  for (let cursor: string | undefined, more = true; more; ) {
    const page = await readEvents(connection.db, protector, caller, cursor, limit);
    sequences.push(...page.events.map((e) => e.sequence));
    cursors.push(page.next_cursor);
    cursor = page.next_cursor;
    more = page.has_more;
  }
  return { sequences, cursors };
}

describe('events partitions', () => {
  it('a migrated database has this month and three ahead; the maintenance pass adds months as time goes on, idempotently', async () => {
    const now = new Date();
    const thisMonth = monthsAfter(now, 0);
    const partitions = await listPartitions(connection.sql, 'events');
    // A new database got no legacy partition (its single table was empty at 0019).
    expect(partitions.map((p) => p.name).every((name) => /^events_p\d{4}_\d{2}$/.test(name))).toBe(true);
    expect(partitions[0].from!.getTime()).toBeLessThanOrEqual(thisMonth.getTime());
    expect(partitions.at(-1)!.to!.getTime()).toBeGreaterThanOrEqual(monthsAfter(now, EVENTS_MONTHS_AHEAD + 1).getTime());

    expect((await ensureEventPartitions(connection.sql, now)).created).toEqual([]);
    const later = monthsAfter(partitions.at(-1)!.from!, 2);
    const settings = { idempotencyKeySeconds: 86_400, rateLimitCounterSeconds: 3600, webhookHistorySeconds: 86_400 * 30 };
    const first = await runMaintenancePass(connection.sql, settings, later);
    expect(first.eventPartitions.created.length).toBe(2 + EVENTS_MONTHS_AHEAD - 1);
    expect(first.eventPartitions.horizon).toEqual(monthsAfter(later, EVENTS_MONTHS_AHEAD + 1));
    expect((await runMaintenancePass(connection.sql, settings, later)).eventPartitions.created).toEqual([]);

    // Every partition made by the maintenance pass has the keys 0018 gave the first ones.
    const keys = await connection.sql<{ partition: string; indexes: string }[]>`
      select c.relname as partition, string_agg(regexp_replace(pg_get_indexdef(i.indexrelid), 'events_p\\d{4}_\\d{2}', 'P', 'g'), '; ' order by pg_get_indexdef(i.indexrelid) like '%pkey%' desc) as indexes
      from pg_inherits h join pg_class c on c.oid = h.inhrelid join pg_index i on i.indrelid = c.oid
      where h.inhparent = 'events'::regclass group by 1`;
    expect(new Set(keys.map((k) => k.indexes))).toEqual(
      new Set(['CREATE UNIQUE INDEX P_pkey ON public.P USING btree (id); CREATE UNIQUE INDEX P_stream_sequence_idx ON public.P USING btree (client_id, environment, sequence)']),
    );
  });

  it('a row created at a month boundary lands in the month it starts; the last instant of a month in that month', async () => {
    const caller = await newClient();
    const month = monthsAfter(new Date(), 1);
    await connection.sql`
      insert into events (id, client_id, environment, sequence, type, version, occurred_at, data, created_at)
      values (gen_random_uuid(), ${caller.clientId}, 'sandbox', 1, 'order.updated', 1, now(), '{}', ${new Date(month.getTime() - 1).toISOString()}::timestamptz - interval '999 microseconds'),
             (gen_random_uuid(), ${caller.clientId}, 'sandbox', 2, 'order.updated', 1, now(), '{}', ${month.toISOString()})`;
    const rows = await connection.sql<{ sequence: number; partition: string }[]>`
      select sequence::int, tableoid::regclass::text as partition from events where client_id = ${caller.clientId} order by sequence`;
    const name = (at: Date) => `events_p${at.getUTCFullYear()}_${String(at.getUTCMonth() + 1).padStart(2, '0')}`;
    expect(rows).toEqual([
      { sequence: 1, partition: name(monthsAfter(month, -1)) },
      { sequence: 2, partition: name(month) },
    ]);
  });

  it('a stream whose events span several months pages across the partition boundaries in sequence order, dense, its cursors continuing', async () => {
    const caller = await newClient();
    await ensureEventPartitions(connection.sql, new Date(), { since: utc('2026-01-01') });
    // 90 events over three months: January, February and March 2026, 30 of each.
    await writeEvents(caller, 0, 30, utc('2026-01-20'), 3600);
    await writeEvents(caller, 30, 30, utc('2026-02-20'), 3600);
    await writeEvents(caller, 60, 30, utc('2026-03-20'), 3600);
    const partitions = await connection.sql<{ partition: string }[]>`select distinct tableoid::regclass::text as partition from events where client_id = ${caller.clientId} order by 1`;
    expect(partitions.map((p) => p.partition)).toEqual(['events_p2026_01', 'events_p2026_02', 'events_p2026_03']);
    for (const limit of [7, 30, 500]) {
      const { sequences } = await readAll(caller, limit);
      expect(sequences).toEqual(Array.from({ length: 90 }, (_, i) => i + 1));
    }
    // A cursor from one page continues at the next sequence, whichever partition holds it.
    const { cursors } = await readAll(caller, 29);
    const next = await readEvents(connection.db, protector, caller, cursors[0], 3);
    expect(next.events.map((e) => e.sequence)).toEqual([30, 31, 32]);
  });

  it('the page query reads each partition holding the stream by its stream index, merged under the limit: no sequential scan of a partition with rows, no sort of more than a page', async () => {
    const caller = await newClient();
    await ensureEventPartitions(connection.sql, new Date(), { since: utc('2026-01-01') });
    // Enough rows, of this and other streams, that the planner would rather scan a whole partition if it could not use the index.
    await writeEvents(caller, 0, 20_000, utc('2026-01-01'), 600);
    for (let i = 0; i < 3; i++) await writeEvents(await newClient(), 0, 10_000, utc('2026-01-01'), 1200);
    await connection.sql`analyze events`;
    const holding = new Set((await connection.sql<{ partition: string }[]>`select distinct tableoid::regclass::text as partition from events where client_id = ${caller.clientId}`).map((r) => r.partition));
    expect(holding.size).toBeGreaterThan(2);
    const session = await connection.sql.reserve();
    const prepared: string[] = [];
    try {
      for (const mode of ['force_custom_plan', 'force_generic_plan']) {
        await session.unsafe(`set plan_cache_mode = ${mode}`);
        await session.unsafe(`prepare page_${mode}(uuid, environment, bigint, int) as select * from events where client_id = $1 and environment = $2 and sequence > $3 order by sequence limit $4`);
        prepared.push(`page_${mode}`);
        for (const after of [0, 10_000, 19_990]) {
          const [{ 'QUERY PLAN': [{ Plan: plan }] }] = await session.unsafe(`explain (format json) execute page_${mode}('${caller.clientId}', 'sandbox', ${after}, 101)`);
          const where = `${mode}, after ${after}: ${JSON.stringify(plan)}`;
          const nodes: PlanNode[] = [];
          const walk = (node: PlanNode) => {
            nodes.push(node);
            node.Plans?.forEach(walk);
          };
          walk(plan);
          expect(plan['Node Type'], where).toBe('Limit');
          // Partitions without rows (months ahead) cost nothing whichever way they are read; the ones with rows go by the stream index.
          const scanned = nodes.filter((n) => n['Relation Name'] && holding.has(n['Relation Name']));
          expect(scanned.length, where).toBeGreaterThan(0);
          for (const node of scanned) {
            const index = node['Node Type'] === 'Bitmap Heap Scan' ? node.Plans?.[0]['Index Name'] : node['Index Name'];
            expect(['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan'], where).toContain(node['Node Type']);
            expect(index, where).toBe(`${node['Relation Name']}_stream_sequence_idx`);
          }
          // A sort only of the few rows past the cursor near the head, never of a partition.
          for (const sort of nodes.filter((n) => n['Node Type'] === 'Sort')) expect(sort['Plan Rows'], where).toBeLessThanOrEqual(101);
          if (after === 0) expect(nodes.some((n) => n['Node Type'] === 'Merge Append'), where).toBe(true);
        }
      }
    } finally {
      // Only this test's statements: postgres.js keeps its own prepared ones on the connection.
      for (const name of prepared) await session.unsafe(`deallocate ${name}`);
      await session.unsafe('reset plan_cache_mode');
      session.release();
    }
  });

  it('a month detached (archived) out of the stream is never skipped silently: a cursor before it is refused, naming the oldest kept; without a cursor the stream starts there', async () => {
    const caller = await newClient();
    await ensureEventPartitions(connection.sql, new Date(), { since: utc('2025-06-01') });
    await writeEvents(caller, 0, 10, utc('2025-06-10'), 3600);
    await writeEvents(caller, 10, 10, utc('2025-07-10'), 3600);
    await writeEvents(caller, 20, 10, utc('2025-08-10'), 3600);
    const page = await readEvents(connection.db, protector, caller, undefined, 5);
    const older = await readEvents(connection.db, protector, caller, page.next_cursor, 10);
    expect(older.events.map((e) => e.sequence)).toEqual([6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);

    // June and July go to the archive (detached, kept as plain tables), as docs/operations.md describes.
    expect(await detachPartitionsBefore(connection.sql, 'events', utc('2025-08-01'), { drop: false })).toEqual(['events_p2025_06', 'events_p2025_07']);
    const refused = await readEvents(connection.db, protector, caller, page.next_cursor, 10).then(
      () => undefined,
      (error: { status?: number; details?: unknown; message: string }) => error,
    );
    expect(refused).toMatchObject({ status: 400, details: [{ field: 'cursor', issue: 'cursor_events_archived' }] });
    expect(refused!.message).toMatch(/from sequence 6 to 20\b.*oldest event kept \(sequence 21\)/);
    const fromStart = await readEvents(connection.db, protector, caller, undefined, 100);
    expect(fromStart.events.map((e) => e.sequence)).toEqual(Array.from({ length: 10 }, (_, i) => i + 21));
    // A cursor past the archived range reads on as before.
    const fromKept = await readEvents(connection.db, protector, caller, fromStart.next_cursor, 100);
    expect(fromKept.events).toEqual([]);
  });
});
