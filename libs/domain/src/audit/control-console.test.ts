import { randomBytes } from 'node:crypto';
import { SCOPES } from '@lop/contract';
import { afterAll, describe, expect, it } from 'vitest';
import type { RequestContext } from '../context';
import { createKey } from '../control-plane/control-plane';
import { StreamWriteGate } from '../events/write-gate';
import { partnerRouter } from '../routers';
import { DataProtector } from '../security/protector';
import { createCallerFactory } from '../trpc';
import { newOrder, openTestDatabase } from '../../testing/orders';
import { ReadAuditWriter } from './read-audit';

/**
 * A partner's own control-plane changes through the console (its sandbox webhook endpoints and
 * their secrets) are recorded like an administrator's, with the key and the request that made them.
 */
const connection = openTestDatabase();
afterAll(() => connection.close());
const { db, sql } = connection;

describe('webhook endpoint changes through the console', () => {
  it('records create, update, rotate and disable with the key, the console door and the request id, and never the secret', async () => {
    const { order } = await newOrder(db);
    const created = await createKey(db, { clientId: order.clientId, environment: 'sandbox', scopes: [...SCOPES] });
    const ctx: RequestContext = {
      door: 'console',
      spendRateLimit: async () => undefined,
      db,
      sql,
      requestId: `req_audit_${randomBytes(6).toString('hex')}`,
      authorization: `Bearer ${created.key}`,
      headers: {},
      protector: new DataProtector(randomBytes(32)),
      audit: new ReadAuditWriter(sql),
      webhooks: { destination: { allowLoopback: true, servicePorts: [] }, attemptTimeoutMs: 2_000 },
      writeGate: new StreamWriteGate({ concurrency: 2 }),
      identified: {},
      response: { headers: {} },
    };
    const api = createCallerFactory(partnerRouter)(ctx).console.webhooks;
    const endpoint = (await api.create({ url: 'http://127.0.0.1:9/hooks', event_types: ['order.created'] })).data;
    const rotated = (await api.rotateSecret({ subscription_id: endpoint.subscription_id })).data;
    await api.update({ subscription_id: endpoint.subscription_id, event_types: ['order.updated'] });
    await api.disable({ subscription_id: endpoint.subscription_id });

    const rows = await sql<{ action: string; actor: string; door: string; key_id: string; request_id: string; resource_id: string; client_id: string; environment: string }[]>`
      select action, actor, door, key_id, request_id, resource_id, client_id, environment from audit_records
      where kind = 'control' and resource_id = ${endpoint.subscription_id} order by id`;
    expect(rows.map((r) => r.action)).toEqual(['webhooks.create', 'webhooks.rotate_secret', 'webhooks.update', 'webhooks.disable']);
    for (const row of rows) {
      expect(row).toMatchObject({ door: 'console', key_id: created.key_id, request_id: ctx.requestId, client_id: order.clientId, environment: 'sandbox' });
      expect(row.actor).toMatch(/^key:lop_test_/);
    }
    const text = JSON.stringify(await sql`select * from audit_records where resource_id = ${endpoint.subscription_id}`);
    expect(text).not.toContain(endpoint.secret);
    expect(text).not.toContain(rotated.secret);
  });
});
