import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, createTestDatabase, withDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { toPartnerEvent } from '@lop/domain';
import { testDatabaseUrl } from '@lop/testing';
import { loadBenchData } from './load-data';

let database: TestDatabase;
let connection: DatabaseConnection;
beforeAll(async () => {
  database = await createTestDatabase(withDatabase(testDatabaseUrl(), 'postgres'), 'benchload');
  connection = connectDatabase(database.url, { max: 2, applicationName: 'bench-load-test' });
}, 60_000);
afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

describe('the bench loader', () => {
  it("copies events as the domain writes them: each copy's stored partner JSON is its own columns rendered, every stream dense, the history spread over monthly partitions", async () => {
    const data = await loadBenchData(connection, { orders: 40, otherClients: 2, exclusive: true });
    // The project's pool hands timestamps over as text (libs/db/src/client.ts).
    const rows = await connection.sql<{ id: string; client_id: string; environment: 'sandbox'; sequence: string; type: string; version: number; occurred_at: string; program_id: string | null; order_id: string | null; data: Record<string, unknown>; body: string }[]>`
      select * from events order by client_id, sequence`;
    expect(rows.length).toBe(data.eventCount + data.others.reduce((n, other) => n + other.eventCount, 0));
    for (const row of rows) {
      const rendered = JSON.stringify(
        toPartnerEvent({ id: row.id, clientId: row.client_id, environment: row.environment, sequence: Number(row.sequence), type: row.type, version: row.version, occurredAt: new Date(row.occurred_at), programId: row.program_id, orderId: row.order_id, data: row.data }),
      );
      expect(row.body).toBe(rendered);
    }
    for (const clientId of new Set(rows.map((row) => row.client_id))) {
      const sequences = rows.filter((row) => row.client_id === clientId).map((row) => Number(row.sequence));
      expect(sequences).toEqual(sequences.map((_, i) => i + 1));
    }
    // The copies' history is spread over the past months, each in its month's partition of events.
    const partitions = await connection.sql<{ partition: string; n: number }[]>`
      select tableoid::regclass::text as partition, count(*)::int as n from events group by 1 order by 1`;
    expect(partitions.length).toBeGreaterThanOrEqual(8);
    for (const { partition } of partitions) expect(partition).toMatch(/^events_p\d{4}_\d{2}$/);
  }, 120_000);
});
