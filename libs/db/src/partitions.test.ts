import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { detachPartitionsBefore, ensurePartitions, listPartitions, nextPeriod, partitionHorizon, partitionName, periodStart, type PartitionedTable } from './partitions';
import { createTestDatabase, withDatabase, type TestDatabase } from './test-database';

const serverUrl = withDatabase(inject('databaseUrl'), 'postgres');
let database: TestDatabase;
let sql: postgres.Sql;

// A table of its own, not the schema's: the mechanics are the same for every partitioned table.
const spec: PartitionedTable = {
  table: 'samples',
  localDdl: (partition, name) => [`alter table ${partition} add constraint "${name}_pkey" primary key (id)`],
};

beforeAll(async () => {
  database = await createTestDatabase(serverUrl, 'partitions', { migrated: false });
  sql = postgres(database.url, { max: 4, onnotice: () => undefined });
  await sql`create table samples (id int not null, note text default 'x', created_at timestamptz not null default now()) partition by range (created_at)`;
  await sql`create index samples_created_idx on samples (created_at)`;
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

describe('monthly partitions of a table', () => {
  it('are named and bounded by UTC calendar periods', () => {
    const at = new Date('2027-01-31T23:59:59.999Z');
    expect(periodStart(at)).toEqual(new Date('2027-01-01T00:00:00Z'));
    expect(nextPeriod(periodStart(at))).toEqual(new Date('2027-02-01T00:00:00Z'));
    expect(nextPeriod(new Date('2027-12-01T00:00:00Z'))).toEqual(new Date('2028-01-01T00:00:00Z'));
    expect(periodStart(at, 'day')).toEqual(new Date('2027-01-31T00:00:00Z'));
    expect(partitionName('samples', new Date('2027-01-01T00:00:00Z'))).toBe('samples_p2027_01');
    expect(partitionName('samples', new Date('2027-01-31T00:00:00Z'), 'day')).toBe('samples_p2027_01_31');
  });

  it('are created for every month of a range, once, with their local DDL and the parent\'s indexes; a second run (or two at once) creates none', async () => {
    const [first, second] = await Promise.all([
      ensurePartitions(sql, spec, new Date('2026-11-15T00:00:00Z'), new Date('2027-02-01T00:00:00Z')),
      ensurePartitions(sql, spec, new Date('2026-11-15T00:00:00Z'), new Date('2027-02-01T00:00:00Z')),
    ]);
    expect([...first, ...second].sort()).toEqual(['samples_p2026_11', 'samples_p2026_12', 'samples_p2027_01']);
    expect(await ensurePartitions(sql, spec, new Date('2026-11-01T00:00:00Z'), new Date('2027-02-01T00:00:00Z'))).toEqual([]);
    const partitions = await listPartitions(sql, 'samples');
    expect(partitions.map((p) => [p.name, p.from?.toISOString(), p.to?.toISOString()])).toEqual([
      ['samples_p2026_11', '2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
      ['samples_p2026_12', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
      ['samples_p2027_01', '2027-01-01T00:00:00.000Z', '2027-02-01T00:00:00.000Z'],
    ]);
    expect(partitionHorizon(partitions)).toEqual(new Date('2027-02-01T00:00:00Z'));
    const indexes = await sql<{ indexname: string }[]>`select indexname from pg_indexes where tablename = 'samples_p2026_12' order by 1`;
    expect(indexes.map((i) => i.indexname)).toEqual(['samples_p2026_12_created_at_idx', 'samples_p2026_12_pkey']);
  });

  it('route a row at a month boundary to the month it starts, and refuse a row past the horizon', async () => {
    await sql`insert into samples (id, created_at) values (1, '2026-11-30T23:59:59.999999Z'), (2, '2026-12-01T00:00:00Z')`;
    const rows = await sql<{ id: number; partition: string }[]>`select id, tableoid::regclass::text as partition from samples where id in (1, 2) order by id`;
    expect(rows).toEqual([
      { id: 1, partition: 'samples_p2026_11' },
      { id: 2, partition: 'samples_p2026_12' },
    ]);
    await expect(sql`insert into samples (id, created_at) values (3, '2027-02-01T00:00:00Z')`).rejects.toThrow(/no partition of relation "samples" found for row/);
  });

  it('leave alone a period another partition already covers (a wider legacy one)', async () => {
    await sql`create table samples_legacy (like samples including defaults)`;
    await sql`alter table samples attach partition samples_legacy for values from (minvalue) to ('2026-11-01T00:00:00Z')`;
    expect(await ensurePartitions(sql, spec, new Date('2026-09-01T00:00:00Z'), new Date('2026-12-01T00:00:00Z'))).toEqual([]);
    const partitions = await listPartitions(sql, 'samples');
    expect(partitions[0]).toMatchObject({ name: 'samples_legacy', from: null, to: new Date('2026-11-01T00:00:00Z') });
  });

  it('older than a cutoff are detached concurrently and dropped, whole, leaving the newer ones', async () => {
    const gone = await detachPartitionsBefore(sql, 'samples', new Date('2026-12-01T00:00:00Z'));
    expect(gone).toEqual(['samples_legacy', 'samples_p2026_11']);
    expect((await listPartitions(sql, 'samples')).map((p) => p.name)).toEqual(['samples_p2026_12', 'samples_p2027_01']);
    const [{ left }] = await sql<{ left: string | null }[]>`select to_regclass('samples_p2026_11')::text as left`;
    expect(left).toBeNull();
    expect(await sql`select id from samples order by id`).toEqual([{ id: 2 }]);
  });

  it('can be detached and kept as a plain table (to archive it), and the period is then not created again over it', async () => {
    expect(await detachPartitionsBefore(sql, 'samples', new Date('2027-01-01T00:00:00Z'), { drop: false })).toEqual(['samples_p2026_12']);
    expect(await sql`select id from samples_p2026_12`).toEqual([{ id: 2 }]);
    await expect(ensurePartitions(sql, spec, new Date('2026-12-01T00:00:00Z'), new Date('2027-01-01T00:00:00Z'))).rejects.toThrow(/samples_p2026_12 exists but is not a partition/);
  });
});
