import { describe, expect, it } from 'vitest';
import { PartnerError } from '../http/errors';
import { StreamWriteGate } from './write-gate';

const A = { clientId: 'client-a', environment: 'sandbox' as const };
const B = { clientId: 'client-b', environment: 'sandbox' as const };

/** A write that runs until `finish()`. */
function heldWrite() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  let started = false;
  return { work: async () => ((started = true), await done, 'ok'), finish, started: () => started };
}

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PartnerError);
  const partner = error as PartnerError;
  expect(partner.errorCode).toBe('rate_limited');
  expect(partner.details?.[0].issue).toBe('too_many_concurrent_writes');
  expect(partner.headers['Retry-After']).toBe('1');
}

describe('StreamWriteGate: concurrent writes per (client, environment), before a connection is taken', () => {
  it('runs `concurrency` writes of one stream at once; the next waits and runs when a slot frees', async () => {
    const gate = new StreamWriteGate({ concurrency: 2, maxWaitMs: 5_000 });
    const [w1, w2, w3] = [heldWrite(), heldWrite(), heldWrite()];
    const runs = [gate.run(A, w1.work), gate.run(A, w2.work), gate.run(A, w3.work)];
    await new Promise((r) => setTimeout(r, 20));
    expect([w1.started(), w2.started(), w3.started()]).toEqual([true, true, false]);
    w1.finish();
    await runs[0];
    await new Promise((r) => setTimeout(r, 0));
    expect(w3.started()).toBe(true);
    w2.finish();
    w3.finish();
    expect(await Promise.all(runs)).toEqual(['ok', 'ok', 'ok']);
  });

  it('refuses a write that waited maxWaitMs with 429 rate_limited (too_many_concurrent_writes) and Retry-After: 1, and never runs it', async () => {
    const gate = new StreamWriteGate({ concurrency: 1, maxWaitMs: 50 });
    const holder = heldWrite();
    const running = gate.run(A, holder.work);
    const late = heldWrite();
    await refusal(gate.run(A, late.work));
    expect(late.started()).toBe(false);
    holder.finish();
    await running;
  });

  it('refuses at once past maxWaiting waiters (the limit waits, one past it does not)', async () => {
    const gate = new StreamWriteGate({ concurrency: 1, maxWaitMs: 5_000, maxWaiting: 2 });
    const holder = heldWrite();
    const running = gate.run(A, holder.work);
    const waiters = [gate.run(A, async () => 'w1'), gate.run(A, async () => 'w2')];
    const started = Date.now();
    await refusal(gate.run(A, async () => 'w3'));
    expect(Date.now() - started).toBeLessThan(1_000);
    holder.finish();
    expect(await Promise.all([running, ...waiters])).toEqual(['ok', 'w1', 'w2']);
  });

  it('one client’s full gate does not hold back another client or another environment', async () => {
    const gate = new StreamWriteGate({ concurrency: 1, maxWaitMs: 50, maxWaiting: 0 });
    const holder = heldWrite();
    const running = gate.run(A, holder.work);
    await refusal(gate.run(A, async () => 'a'));
    expect(await gate.run(B, async () => 'b')).toBe('b');
    expect(await gate.run({ ...A, environment: 'production' }, async () => 'a-production')).toBe('a-production');
    holder.finish();
    await running;
  });

  it('a lane has slots of its own: a full writes lane does not hold back the rate-limit lane of the same stream', async () => {
    const gate = new StreamWriteGate({ concurrency: 1, maxWaitMs: 50, maxWaiting: 0 });
    const holder = heldWrite();
    const running = gate.run(A, holder.work);
    await refusal(gate.run(A, async () => 'write'));
    expect(await gate.run(A, async () => 'spent', 'rate-limit')).toBe('spent');
    holder.finish();
    await running;
  });

  it("another lane's slots are its own number (laneConcurrency), not the writes'", async () => {
    const gate = new StreamWriteGate({ concurrency: 3, laneConcurrency: 1, maxWaitMs: 50, maxWaiting: 0 });
    const holders = [heldWrite(), heldWrite(), heldWrite(), heldWrite()];
    const writes = holders.slice(0, 3).map((holder) => gate.run(A, holder.work));
    const spend = gate.run(A, holders[3].work, 'rate-limit');
    await refusal(gate.run(A, async () => 'a fourth write'));
    await refusal(gate.run(A, async () => 'a second spend', 'rate-limit'));
    for (const holder of holders) holder.finish();
    await Promise.all([...writes, spend]);
  });

  it('frees the slot of a write that fails', async () => {
    const gate = new StreamWriteGate({ concurrency: 1, maxWaitMs: 50, maxWaiting: 0 });
    await expect(gate.run(A, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await gate.run(A, async () => 'next')).toBe('next');
  });
});
