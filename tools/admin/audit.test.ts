import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRecords, connectDatabase, createTestDatabase, type DatabaseConnection, type TestDatabase } from '@lop/db';
import { auditRow, sealAuditTrail, type DemoSeedResult } from '@lop/domain';
import { fixtures, startReceiver, testDatabaseUrl, type Receiver } from '@lop/testing';
import { expectUsageError } from './testing/expect-error';
import { admin, adminWithEnvironment, openTestDatabase } from './testing/run-admin';

// The CLI processes inherit this environment: one encryption key, and local receivers allowed.
process.env.PARTNER_ENCRYPTION_KEY = randomBytes(32).toString('base64');
process.env.PARTNER_WEBHOOKS_ALLOW_LOOPBACK = 'true';

const database = openTestDatabase();
const f = fixtures(database.db);
let demo: DemoSeedResult;
let receiver: Receiver;

beforeAll(async () => {
  demo = await f.demo();
  receiver = await startReceiver(() => ({ status: 200 }));
});
afterAll(async () => {
  await receiver?.close();
  await database.close();
});

interface Row {
  action: string;
  actor: string;
  door: string;
  client_id: string | null;
  environment: string | null;
  order_id: string | null;
  resource_id: string | null;
  details: Record<string, unknown> | null;
}
const controlRecords = (clientId: string) =>
  database.sql<Row[]>`select action, actor, door, client_id, environment, order_id, resource_id, details from audit_records where kind = 'control' and client_id = ${clientId} and actor <> 'system:unattributed' order by id`;
// (Fixtures, which name no operator, are recorded as system:unattributed: left out here.)

function ok(run: Awaited<ReturnType<typeof admin>>) {
  expect(run.code, run.stderr).toBe(0);
  return run.json();
}

describe('control-plane actions in the audit trail', () => {
  it('records keys, grants and webhook subscriptions with the --operator, and the OS user when none is given', async () => {
    const clientId = (await f.client(demo.laboratory_id, 'Audit CLI Health')).client_id;
    const key = ok(await admin('--operator', 'alice@lab', 'keys', 'create', '--client', clientId, '--environment', 'sandbox', '--scopes', 'all', '--json'));
    ok(await admin('--operator', 'alice@lab', 'keys', 'revoke', key.key_id, '--json'));
    ok(await admin('programs', 'grant', '--client', clientId, '--all', '--environment', 'sandbox', '--json'));
    ok(await admin('--operator', 'bob', 'programs', 'revoke', '--client', clientId, '--all', '--environment', 'sandbox', '--json'));
    await f.key(clientId, 'sandbox');
    const subscription = ok(await admin('--operator', 'carol', 'webhooks', 'create', '--client', clientId, '--environment', 'sandbox', '--url', receiver.url('/hook'), '--events', 'all', '--json'));
    ok(await admin('--operator', 'carol', 'webhooks', 'rotate-secret', subscription.subscription_id, '--json'));
    ok(await admin('--operator', 'carol', 'webhooks', 'disable', subscription.subscription_id, '--json'));

    const rows = await controlRecords(clientId);
    const os = process.env.USER || userInfo().username;
    expect(rows.map((r) => [r.action, r.actor])).toEqual([
      ['keys.create', 'operator:alice@lab'],
      ['keys.revoke', 'operator:alice@lab'],
      ['programs.grant', `operator:${os}`],
      ['programs.revoke', 'operator:bob'],
      ['webhooks.create', 'operator:carol'],
      ['webhooks.rotate_secret', 'operator:carol'],
      ['webhooks.disable', 'operator:carol'],
    ]);
    expect(rows.every((r) => r.door === 'admin' && r.environment === 'sandbox')).toBe(true);
    expect(rows[0]).toMatchObject({ resource_id: key.key_id, details: { scopes: expect.any(Array), key_prefix: expect.stringMatching(/^lop_test_/) } });
    // The key and the signing secret never reach the trail.
    const text = JSON.stringify(await database.sql`select * from audit_records where client_id = ${clientId}`);
    expect(text).not.toContain(key.key);
    expect(text).not.toContain(subscription.secret);
  });

  it('records each laboratory operation with its operator and order, in the operation’s transaction (a refused one leaves none)', async () => {
    const laboratory = await f.laboratory();
    const client = await f.client(laboratory.id);
    const program = await f.program(laboratory.id);
    const item = await f.item(program.id);
    const order = await f.order(client.client_id, program, item, { lifecycleDetail: 'received' });
    ok(await admin('--operator', 'dana', 'lab', 'accept', order.id, '--json'));
    // Accepting twice is refused by the transition table: no record.
    expect((await admin('--operator', 'dana', 'lab', 'accept', order.id)).code).toBe(1);
    expect(await controlRecords(client.client_id)).toMatchObject([{ action: 'lab.accept', actor: 'operator:dana', door: 'admin', order_id: order.id }]);
  });

  it('refuses an empty --operator', async () => {
    expectUsageError(await admin('--operator', ' ', 'programs', 'grant', '--client', randomUUID(), '--all', '--environment', 'sandbox'), /--operator/);
  });
});

describe('admin audit list, export and verify', () => {
  let trail: TestDatabase;
  let connection: DatabaseConnection;
  const env = () => ({ DATABASE_URL: trail.url });
  const orderId = randomUUID();
  const clientId = randomUUID();

  beforeAll(async () => {
    // Its own database: tampering with its trail must not fail anyone else's verify.
    trail = await createTestDatabase(testDatabaseUrl(), 'audit_cli');
    connection = connectDatabase(trail.url, { max: 2 });
    const at = Date.now() - 3_600_000;
    await connection.db.insert(auditRecords).values(
      Array.from({ length: 12 }, (_, i) =>
        auditRow({ kind: 'read', clientId, environment: 'production', actor: 'key:lop_live_AbCd', action: 'orders.get', door: 'rest', route: 'GET /v1/orders/{orderId}', status: i === 5 ? 404 : 200, requestId: `req_cli_${i}`, orderId: i < 10 ? orderId : randomUUID() }, new Date(at + i * 1000)),
      ),
    );
    await sealAuditTrail(connection.sql, { marginSeconds: 60 });
  });
  afterAll(async () => {
    await connection?.close();
    await trail?.drop();
  });

  it('lists by resource, newest first, a page at a time', async () => {
    const first = ok(await adminWithEnvironment(env(), 'audit', 'list', '--resource', orderId, '--limit', '4', '--json'));
    expect(first.records.map((r: { request_id: string }) => r.request_id)).toEqual(['req_cli_9', 'req_cli_8', 'req_cli_7', 'req_cli_6']);
    const rest = ok(await adminWithEnvironment(env(), 'audit', 'list', '--resource', orderId, '--limit', '10', '--before', first.next, '--json'));
    expect(rest.records).toHaveLength(6);
    expect(rest.next).toBeNull();
    const text = await adminWithEnvironment(env(), 'audit', 'list', '--client', clientId, '--limit', '2');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/orders\.get\s+200\s+key:lop_live_AbCd/);
    expect(text.stdout).toContain('More: --before ');
    expectUsageError(await adminWithEnvironment(env(), 'audit', 'list', '--from', 'yesterday'), /--from/);
  });

  it('exports JSON lines to a file and resumes after the last line', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'audit-export-'));
    const from = new Date(Date.now() - 86_400_000).toISOString();
    const whole = await adminWithEnvironment(env(), 'audit', 'export', '--from', from);
    expect(whole.code, whole.stderr).toBe(0);
    const lines = whole.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.type === 'record')).toHaveLength(12);
    expect(lines.at(-1)).toMatchObject({ type: 'chain_head', seal_seq: 12 });

    const file = join(folder, 'trail.jsonl');
    const part = await adminWithEnvironment(env(), 'audit', 'export', '--from', from, '--out', file);
    expect(part.code, part.stderr).toBe(0);
    const written = readFileSync(file, 'utf8').trim().split('\n');
    // As if the first run had stopped after line 5: resuming appends exactly the rest.
    writeFileSync(file, `${written.slice(0, 5).join('\n')}\n`);
    const resumed = await adminWithEnvironment(env(), 'audit', 'export', '--from', from, '--out', file, '--after', JSON.parse(written[4]).cursor);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toEqual(written);
  });

  it('verify: exit 0 on a clean trail, 1 naming the record once one is edited or deleted, and with --heads once chain and heads were rewritten together', async () => {
    const clean = await adminWithEnvironment(env(), 'audit', 'verify');
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stdout).toMatch(/^The audit trail verifies: 12 sealed record\(s\) in 1 month\(s\)\./);

    await connection.sql`update audit_records set status = 200 where request_id = 'req_cli_5'`;
    const edited = await adminWithEnvironment(env(), 'audit', 'verify', '--json');
    expect(edited.code).toBe(1);
    expect(edited.json().problems).toMatchObject([{ kind: 'edited', position: 6 }]);
    await connection.sql`update audit_records set status = 404 where request_id = 'req_cli_5'`;

    // A rewrite of a record with its hash, its chain and the head recomputed passes verify on its
    // own; the heads exported earlier reveal it.
    const folder = mkdtempSync(join(tmpdir(), 'audit-heads-'));
    const heads = join(folder, 'heads.jsonl');
    writeFileSync(heads, (await adminWithEnvironment(env(), 'audit', 'export', '--from', new Date(Date.now() - 86_400_000).toISOString())).stdout);
    const snapshot = await connection.sql`select * from audit_records order by seal_seq`;
    const headRow = (await connection.sql`select * from audit_chain_heads`)[0];
    await connection.sql`update audit_records set actor = 'key:lop_live_Else', seal_seq = null, chain_hash = null`;
    await connection.sql`delete from audit_chain_heads`;
    for (const r of await connection.sql<{ id: string; request_id: string; status: number; order_id: string; ms: string }[]>`select id, request_id, status, order_id, (extract(epoch from recorded_at) * 1000)::bigint as ms from audit_records`) {
      const row = auditRow({ kind: 'read', clientId, environment: 'production', actor: 'key:lop_live_Else', action: 'orders.get', door: 'rest', route: 'GET /v1/orders/{orderId}', status: r.status, requestId: r.request_id, orderId: r.order_id }, new Date(Number(r.ms)));
      await connection.sql`update audit_records set content_hash = ${row.contentHash} where id = ${r.id}`;
    }
    await sealAuditTrail(connection.sql, { marginSeconds: 60 });
    expect((await adminWithEnvironment(env(), 'audit', 'verify')).code).toBe(0);
    const revealed = await adminWithEnvironment(env(), 'audit', 'verify', '--heads', heads, '--json');
    expect(revealed.code).toBe(1);
    expect(revealed.json().problems).toMatchObject([{ kind: 'head_mismatch', position: 12 }]);
    // Put the original back.
    await connection.sql`delete from audit_records`;
    await connection.sql`delete from audit_chain_heads`;
    await connection.sql`insert into audit_records ${connection.sql(snapshot)}`;
    await connection.sql`insert into audit_chain_heads ${connection.sql(headRow)}`;
    expect((await adminWithEnvironment(env(), 'audit', 'verify', '--heads', heads)).code).toBe(0);

    await connection.sql`delete from audit_records where request_id = 'req_cli_3'`;
    const deleted = await adminWithEnvironment(env(), 'audit', 'verify');
    expect(deleted.code).toBe(1);
    expect(deleted.stdout).toMatch(/does NOT verify/);
    expect(deleted.stdout).toMatch(/missing: positions 4–4 are missing/);
  });
});
