import { SCOPES } from '@lop/contract';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { RequestContext } from './context';
import { StreamWriteGate } from './events/write-gate';
import { createKey } from './control-plane/control-plane';
import { newOrder, openTestDatabase } from '../testing/orders';
import { PartnerError } from './http/errors';
import { guard, REFUSAL_PAUSE_MS } from './guard';

const connection = openTestDatabase();
afterAll(() => connection.close());

function contextFor(door: RequestContext['door'], authorization: string | undefined) {
  const spendRateLimit = vi.fn(async () => undefined);
  const ctx = { door, authorization, sql: connection.sql, spendRateLimit, writeGate: new StreamWriteGate({ concurrency: 1 }), identified: {} } as unknown as RequestContext;
  return { ctx, spendRateLimit };
}

async function keys() {
  const { order } = await newOrder(connection.db);
  const sandbox = await createKey(connection.db, { clientId: order.clientId, environment: 'sandbox', scopes: [...SCOPES] });
  const production = await createKey(connection.db, { clientId: order.clientId, environment: 'production', scopes: [...SCOPES] });
  return { sandbox, production };
}

describe('the guard every procedure runs, on both doors', () => {
  it('spends the rate-limit budget of the authenticated key’s client and environment, whatever the scheme is spelled', async () => {
    const { sandbox } = await keys();
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'BeArEr']) {
      const { ctx, spendRateLimit } = contextFor('rest', `${scheme} ${sandbox.key}`);
      const caller = await guard(ctx, { scope: 'orders:write', rateLimit: 'create_order' });
      expect(spendRateLimit).toHaveBeenCalledExactlyOnceWith('create_order', `${caller.clientId}:${caller.environment}`);
    }
  });

  it('answers a spent budget after a pause, outside the write gate, so a client resending at once cannot spin the API', async () => {
    const { sandbox } = await keys();
    const { ctx, spendRateLimit } = contextFor('rest', `Bearer ${sandbox.key}`);
    spendRateLimit.mockImplementation(async () => {
      throw new PartnerError('rate_limited', 'spent', { headers: { 'Retry-After': '30' } });
    });
    const refusals = Array.from({ length: 5 }, async () => {
      const started = performance.now();
      await expect(guard(ctx, { scope: 'orders:write', rateLimit: 'create_order' })).rejects.toMatchObject({ errorCode: 'rate_limited', headers: { 'Retry-After': '30' } });
      return performance.now() - started;
    });
    // Five refusals through a gate of one slot: each paused, none waiting behind another's pause
    // (inside the gate the last would take five pauses).
    const took = await Promise.all(refusals);
    for (const ms of took) expect(ms).toBeGreaterThanOrEqual(REFUSAL_PAUSE_MS - 5);
    expect(Math.max(...took)).toBeLessThan(4 * REFUSAL_PAUSE_MS);
  });

  it('spends nothing before the key is authenticated', async () => {
    for (const authorization of [undefined, 'Bearer junk', 'Bearer lop_test_00000000000000000000000000000000', 'Basic abc']) {
      const { ctx, spendRateLimit } = contextFor('console', authorization);
      await expect(guard(ctx, { rateLimit: 'create_order' })).rejects.toMatchObject({ errorCode: 'unauthorized' });
      expect(spendRateLimit).not.toHaveBeenCalled();
      expect(ctx.identified.caller).toBeUndefined();
    }
  });

  it('spends nothing when the key lacks the scope', async () => {
    const { order } = await newOrder(connection.db);
    const readOnly = await createKey(connection.db, { clientId: order.clientId, environment: 'sandbox', scopes: ['orders:read'] });
    const { ctx, spendRateLimit } = contextFor('rest', `Bearer ${readOnly.key}`);
    await expect(guard(ctx, { scope: 'orders:write', rateLimit: 'create_order' })).rejects.toMatchObject({ errorCode: 'forbidden' });
    expect(spendRateLimit).not.toHaveBeenCalled();
    // The caller is named as soon as the key is authenticated, so the transport can log a refused call too (the sandbox request log).
    expect(ctx.identified.caller).toMatchObject({ clientId: order.clientId, environment: 'sandbox', keyPrefix: readOnly.key.slice(0, 13) });
  });

  it('lets production keys through REST and refuses them at the console door', async () => {
    const { production } = await keys();
    await expect(guard(contextFor('rest', `Bearer ${production.key}`).ctx, { scope: 'orders:read' })).resolves.toMatchObject({ environment: 'production' });
    await expect(guard(contextFor('console', `Bearer ${production.key}`).ctx, {})).rejects.toMatchObject({
      errorCode: 'forbidden',
      details: [{ field: 'Authorization', issue: 'production_key_on_console' }],
    });
  });
});
