import { describe, expect, it } from 'vitest';
import type { Stream } from './append';
import { streamKey } from './append';
import { EventWaiter, EventWaiters } from './waiters';

const A: Stream = { clientId: '00000000-0000-4000-8000-00000000000a', environment: 'sandbox' };
const B: Stream = { clientId: '00000000-0000-4000-8000-00000000000b', environment: 'sandbox' };
const A_PRODUCTION: Stream = { ...A, environment: 'production' };

const enter = (waiters: EventWaiters, stream: Stream) => {
  const place = waiters.enter(stream);
  if (typeof place === 'string') throw new Error(`refused: ${place}`);
  return place;
};
const far = () => Date.now() + 60_000;

describe('EventWaiters: the held reads of GET /v1/events?wait in one process', () => {
  it("a notification wakes only its own stream's waiters: not another client's, nor the same client's other environment", async () => {
    const waiters = new EventWaiters({ perStream: 10, perProcess: 100 });
    const [a, b, aProduction] = [enter(waiters, A), enter(waiters, B), enter(waiters, A_PRODUCTION)];
    waiters.wake(streamKey(A));
    expect(await a.next(far())).toBe('woken');
    // The others were not woken: their next() runs to its (past) deadline.
    expect(await b.next(Date.now())).toBe('deadline');
    expect(await aProduction.next(Date.now())).toBe('deadline');
  });

  it('a wake between the read and the wait is not lost; a reconnect wakes every waiter once', async () => {
    const waiters = new EventWaiters({ perStream: 10, perProcess: 100 });
    const a = enter(waiters, A);
    waiters.wake(streamKey(A));
    expect(await a.next(far())).toBe('woken');
    expect(await a.next(Date.now() + 20)).toBe('deadline');
    const b = enter(waiters, B);
    waiters.wakeAll();
    expect(await Promise.all([a.next(far()), b.next(far())])).toEqual(['woken', 'woken']);
  });

  it('caps: the stream cap and one past it, the process cap and one past it; leaving gives the place back', () => {
    const waiters = new EventWaiters({ perStream: 2, perProcess: 3 });
    const first = enter(waiters, A);
    enter(waiters, A);
    expect(waiters.enter(A)).toBe('stream_full');
    enter(waiters, B);
    expect(waiters.size).toBe(3);
    expect(waiters.enter(B)).toBe('process_full');
    first.leave();
    expect(waiters.size).toBe(2);
    expect(waiters.enter(B)).toBeInstanceOf(EventWaiter);
  });

  it('close answers every waiter at once and lets no new read wait', async () => {
    const waiters = new EventWaiters({ perStream: 10, perProcess: 100 });
    const a = enter(waiters, A);
    const waiting = a.next(far());
    waiters.close();
    expect(await waiting).toBe('released');
    expect(waiters.enter(B)).toBe('closing');
  });
});
