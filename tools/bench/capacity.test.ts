import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { testDatabaseUrl } from '@lop/testing';
import { tableBytes } from './capacity';

let database: TestDatabase;
let connection: DatabaseConnection;
beforeAll(async () => {
  database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'capacitysize', { migrated: false });
  connection = connectDatabase(database.url, { max: 1, applicationName: 'capacity-size-test' });
}, 60_000);
afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

describe('the capacity bench’s table sizes', () => {
  it('sum a partitioned table’s partitions (table, TOAST, indexes) and count a plain table as its own single partition', async () => {
    const { sql } = connection;
    await sql`create table plain (id bigint primary key, body text)`;
    await sql`create table split (id bigint, at date, body text, primary key (id, at)) partition by range (at)`;
    await sql`create table split_2026_10 partition of split for values from ('2026-10-01') to ('2026-11-01')`;
    await sql`create table split_2026_11 partition of split for values from ('2026-11-01') to ('2026-12-01')`;
    await sql`insert into plain select g, repeat('x', 3000) from generate_series(1, 500) g`;
    await sql`insert into split select g, date '2026-10-15' + (g % 40), repeat('x', 3000) from generate_series(1, 500) g`;
    const [plain, split] = await tableBytes(sql, ['plain', 'split']);
    expect(plain).toMatchObject({ table: 'plain', rows: 500, partitions: 1 });
    expect(split).toMatchObject({ table: 'split', rows: 500, partitions: 2 });
    const [{ leaves, leafIndexes }] = await sql<{ leaves: number; leafIndexes: number }[]>`
      select (pg_table_size('split_2026_10') + pg_table_size('split_2026_11'))::float8 as leaves,
             (pg_indexes_size('split_2026_10') + pg_indexes_size('split_2026_11'))::float8 as "leafIndexes"`;
    expect(split.tableBytes).toBe(leaves);
    expect(split.indexBytes).toBe(leafIndexes);
    expect(split.tableBytes).toBeGreaterThan(0);
    expect(split.indexBytes).toBeGreaterThan(0);
  });
});
