import { randomUUID } from 'node:crypto';
import { sql as sqlText } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditRecords, connectDatabase, createTestDatabase, migrationsFolderOf, nextPeriod, runMigrations, periodStart, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { ReadAuditWriter } from './read-audit';
import { auditRow, contentHashOf, recordControlAction } from './record';
import { rowOfStored, sealAuditTrail, STORED_COLUMNS, verifyAuditTrail } from './chain';
import { exportAuditRecords, listAuditRecords } from './query';
import { auditRetentionStart, runAuditMaintenance } from './maintenance';

/**
 * Tamper evidence (docs/audit.md § Verification): a clean trail verifies; an edited record, a
 * record deleted from the middle or the end of a month's chain, and a deleted chain head do not.
 * Each case on its own database, so the trails of other test files never interfere.
 */
let database: TestDatabase;
let connection: DatabaseConnection;
const clientId = randomUUID();
const laboratoryId = randomUUID();

async function writeReads(count: number, orderId = randomUUID()) {
  const writer = new ReadAuditWriter(connection.sql);
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      writer.record({ kind: 'read', laboratoryId, clientId, environment: 'production', keyId: randomUUID(), actor: 'key:lop_live_AbCd', action: 'orders.get', door: 'rest', route: 'GET /v1/orders/{orderId}', status: 200, requestId: `req_${i}_${randomUUID()}`, orderId }),
    ),
  );
  return writer;
}

const sealNow = () => sealAuditTrail(connection.sql, { marginSeconds: 0, now: new Date(Date.now() + 1000) });
const verify = () => verifyAuditTrail(connection.sql, { marginSeconds: 600 });

beforeAll(async () => {
  database = await createTestDatabase(inject('databaseUrl'), 'audit_chain');
  connection = connectDatabase(database.url, { max: 4 });
});
afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

describe('the audit trail hash chain', () => {
  it('writes one multi-row INSERT per batch: concurrent records share commits', async () => {
    const writer = await writeReads(200);
    expect(writer.counts.written).toBe(200);
    expect(writer.counts.batches).toBeLessThan(200);
  });

  it('a clean trail verifies, and records are sealed only past the margin', async () => {
    await connection.db.transaction((tx) =>
      recordControlAction(tx, { kind: 'operator', name: 'alice' }, { action: 'keys.create', laboratoryId, clientId, environment: 'production', resourceId: randomUUID(), details: { scopes: ['orders:read'], key_prefix: 'lop_live_AbCd' } }),
    );
    // With a margin of an hour nothing just written is sealed.
    expect((await sealAuditTrail(connection.sql, { marginSeconds: 3600 })).sealed).toBe(0);
    const before = await verify();
    expect(before.unsealed).toBeGreaterThan(0);
    expect((await sealNow()).sealed).toBe(before.unsealed);
    const report = await verify();
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.unsealed).toBe(0);
    expect(report.checked).toBe(before.unsealed);
    // Sealing again changes nothing; new records extend the same chain.
    expect((await sealNow()).sealed).toBe(0);
    await writeReads(5);
    expect((await sealNow()).sealed).toBe(5);
    expect((await verify()).ok).toBe(true);
  });

  it('detects an edited record, then verifies again once it is restored', async () => {
    const [victim] = await connection.sql<{ id: string; status: number }[]>`select id, status from audit_records where seal_seq = 3`;
    await connection.sql`update audit_records set status = 404 where id = ${victim.id}`;
    const report = await verify();
    expect(report.ok).toBe(false);
    expect(report.problems).toMatchObject([{ kind: 'edited', recordId: Number(victim.id), position: 3 }]);
    // An editor who also recomputes the content hash still breaks the chain link.
    await connection.sql`update audit_records set status = ${victim.status}, actor = 'key:lop_live_Else' where id = ${victim.id}`;
    const [stored] = await connection.sql.unsafe(`select ${STORED_COLUMNS} from audit_records where id = $1`, [victim.id]);
    await connection.sql`update audit_records set content_hash = ${contentHashOf(rowOfStored(stored as never))} where id = ${victim.id}`;
    expect((await verify()).problems).toMatchObject([{ kind: 'chain_broken', recordId: Number(victim.id) }]);
    await connection.sql`update audit_records set actor = 'key:lop_live_AbCd' where id = ${victim.id}`;
    await connection.sql`update audit_records set content_hash = ${contentHashOf(rowOfStored((await connection.sql.unsafe(`select ${STORED_COLUMNS} from audit_records where id = $1`, [victim.id]))[0] as never))} where id = ${victim.id}`;
    expect((await verify()).ok).toBe(true);
  });

  it('detects a record deleted from the middle and from the end of a chain, and a deleted chain head', async () => {
    const snapshot = await connection.sql`select * from audit_records order by seal_seq`;
    const [{ max }] = await connection.sql<{ max: string }[]>`select max(seal_seq) as max from audit_records`;
    await connection.sql`delete from audit_records where seal_seq = 10`;
    const middle = await verify();
    expect(middle.ok).toBe(false);
    expect(middle.problems.map((p) => p.kind)).toContain('missing');
    expect(middle.problems[0].message).toMatch(/positions 10–10 are missing/);

    await connection.sql`insert into audit_records ${connection.sql(snapshot.filter((r) => Number(r.seal_seq) === 10))}`;
    expect((await verify()).ok).toBe(true);

    await connection.sql`delete from audit_records where seal_seq = ${max}`;
    const end = await verify();
    expect(end.ok).toBe(false);
    expect(end.problems).toMatchObject([{ kind: 'missing' }]);
    expect(end.problems[0].message).toMatch(/head counts/);
    await connection.sql`insert into audit_records ${connection.sql(snapshot.filter((r) => String(r.seal_seq) === String(max)))}`;
    expect((await verify()).ok).toBe(true);

    const [head] = await connection.sql`select * from audit_chain_heads`;
    await connection.sql`delete from audit_chain_heads`;
    expect((await verify()).problems).toMatchObject([{ kind: 'head_mismatch' }]);
    await connection.sql`insert into audit_chain_heads ${connection.sql(head)}`;
    expect((await verify()).ok).toBe(true);
  });

  it('lists by resource a page at a time, and exports sealed records with their chain heads, resumable from any line', async () => {
    const orderId = randomUUID();
    await writeReads(7, orderId);
    await sealNow();
    const first = await listAuditRecords(connection.sql, { resource: orderId, limit: 4 });
    expect(first.records).toHaveLength(4);
    expect(first.next).not.toBeNull();
    const second = await listAuditRecords(connection.sql, { resource: orderId, limit: 4, before: first.next! });
    expect(second.records).toHaveLength(3);
    expect(second.next).toBeNull();
    expect(new Set([...first.records, ...second.records].map((r) => r.id)).size).toBe(7);
    expect((await listAuditRecords(connection.sql, { clientId, kind: 'control' })).records.map((r) => r.action)).toEqual(['keys.create']);

    const from = new Date(Date.now() - 86_400_000);
    const to = new Date(Date.now() + 60_000);
    const all = [];
    for await (const line of exportAuditRecords(connection.sql, { from, to, pageSize: 10 })) all.push(line);
    const records = all.filter((l) => l.type === 'record');
    const heads = all.filter((l) => l.type === 'chain_head');
    expect(records.length).toBe(Number((await connection.sql`select count(*) as n from audit_records`)[0].n));
    expect(heads).toHaveLength(1);
    const [stored] = await connection.sql<{ head_hash: Buffer }[]>`select head_hash from audit_chain_heads`;
    expect(heads[0]).toMatchObject({ chain_hash: stored.head_hash.toString('hex') });

    // Resuming after line 20 yields exactly the rest.
    const rest = [];
    for await (const line of exportAuditRecords(connection.sql, { from, to, after: all[19].cursor, pageSize: 10 })) rest.push(line);
    expect(rest).toEqual(all.slice(20));
  });

  it('retention keeps six years by default and drops whole months past it with their chain heads', async () => {
    expect(auditRetentionStart(new Date('2026-11-28T12:00:00Z'), 72).toISOString()).toBe('2020-11-01T00:00:00.000Z');
    // A month of records four months ahead (a partition the migration made), then time moves on.
    let ahead = periodStart(new Date());
    for (let i = 0; i < 3; i++) ahead = nextPeriod(ahead);
    await connection.db.insert(auditRecords).values(auditRow({ kind: 'control', actor: 'system:test', action: 'keys.revoke', door: 'system', clientId }, ahead));
    const later = new Date(nextPeriod(ahead).getTime() + 86_400_000);
    // Sealed with the clock in that month; then retention of one month drops every month before it.
    const outcome = await runAuditMaintenance(connection.sql, { retentionMonths: 1, sealMarginSeconds: 0 }, later);
    expect(outcome.dropped.length).toBeGreaterThanOrEqual(3);
    expect((await connection.sql`select count(*)::int as n from audit_records`)[0].n).toBe(1);
    expect((await connection.sql`select period::text as period from audit_chain_heads`).map((r) => r.period)).toEqual([ahead.toISOString().slice(0, 10)]);
    expect((await verify()).ok).toBe(true);
  });
});

describe('on the schema before the trail (0024), which this release also serves', () => {
  it('answers reads unrecorded and lets control-plane actions commit, until the table exists', async () => {
    const older = await createTestDatabase(inject('databaseUrl'), 'audit_before', { migrated: false });
    const folder = await migrationsFolderOf({ upTo: '0024_partition_sandbox_request_log' });
    const before = connectDatabase(older.url, { max: 2 });
    try {
      await runMigrations(older.url, { folder: folder.folder });
      const writer = new ReadAuditWriter(before.sql);
      await writer.record({ kind: 'read', actor: 'key:lop_test_AbCd', action: 'orders.get', door: 'rest', status: 200 });
      expect(writer.counts).toMatchObject({ written: 0, beforeSchema: 1 });
      await before.db.transaction(async (tx) => {
        await recordControlAction(tx, { kind: 'operator', name: 'alice' }, { action: 'keys.revoke' });
        await tx.execute(sqlText`select 1`);
      });
    } finally {
      await before.close();
      await folder.remove();
      await older.drop();
    }
  });
});
