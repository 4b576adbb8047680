import type { Sql } from '@lop/db';
import { EVENTS_CHANNEL, streamKey, type Stream } from './append';

export interface EventWaitLimits {
  /** Reads of one (client, environment) that may wait at once in this process. */
  perStream: number;
  /** Reads of all streams that may wait at once in this process. */
  perProcess: number;
}

export type WaitOutcome = 'woken' | 'deadline' | 'released';

/** One held read: woken by a commit to its stream, its deadline, its client leaving, or shutdown. */
export class EventWaiter {
  private pending = false;
  private settle?: (outcome: WaitOutcome) => void;
  private done = false;

  constructor(
    private readonly onLeave: (waiter: EventWaiter) => void,
    readonly stream: string,
  ) {}

  /** A commit to the stream (or a reconnect of the listener, which may have missed one). */
  wake(): void {
    this.pending = true;
    this.settle?.('woken');
  }

  /** Shutdown or the client went away: answer now, without waiting further. */
  release(): void {
    this.done = true;
    this.settle?.('released');
  }

  /**
   * Waits for the next wake since the last call (at once when one came meanwhile: a commit
   * between the read and this call is not missed), or until `deadline` (epoch ms).
   */
  next(deadline: number): Promise<WaitOutcome> {
    if (this.done) return Promise.resolve('released');
    if (this.pending) {
      this.pending = false;
      return Promise.resolve('woken');
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) return Promise.resolve('deadline');
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish('deadline'), remaining);
      const finish = (outcome: WaitOutcome) => {
        clearTimeout(timer);
        this.settle = undefined;
        this.pending = false;
        resolve(outcome);
      };
      this.settle = finish;
    });
  }

  leave(): void {
    this.done = true;
    this.settle?.('released');
    this.onLeave(this);
  }
}

/**
 * The reads of GET /v1/events that wait for their stream's next commit (`wait`), in one API
 * process. A waiting read holds no database connection: it is a socket and a timer, woken by the
 * process's one LISTEN connection (listenForEvents). Held reads are a shared resource, so they
 * are capped per stream (one partner cannot take them all) and per process (sockets and memory);
 * past either cap `enter` refuses and the read is answered 429 (events/wait.ts).
 */
export class EventWaiters {
  private readonly streams = new Map<string, Set<EventWaiter>>();
  private total = 0;
  private closed = false;
  /** Reads refused since start, by cap (metrics): counted by the caller, which refuses only a read that would wait. */
  readonly refusals = { stream_full: 0, process_full: 0 };

  constructor(private readonly limits: EventWaitLimits) {}

  /** How many reads wait now (metrics, tests). */
  get size(): number {
    return this.total;
  }

  /** A place to wait on `stream`, or why there is none: a cap is reached, or the process is stopping. */
  enter(stream: Stream): EventWaiter | 'stream_full' | 'process_full' | 'closing' {
    if (this.closed) return 'closing';
    const key = streamKey(stream);
    let waiters = this.streams.get(key);
    if ((waiters?.size ?? 0) >= this.limits.perStream) return 'stream_full';
    if (this.total >= this.limits.perProcess) return 'process_full';
    if (!waiters) this.streams.set(key, (waiters = new Set()));
    const waiter = new EventWaiter((left) => this.remove(left), key);
    waiters.add(waiter);
    this.total++;
    return waiter;
  }

  /** A commit appended to the stream named `key` (the notification's payload): only its own waiters wake. */
  wake(key: string): void {
    for (const waiter of this.streams.get(key) ?? []) waiter.wake();
  }

  /** The listener (re)connected: a commit notified while it was away was lost, so every waiter reads once more. */
  wakeAll(): void {
    for (const waiters of this.streams.values()) for (const waiter of waiters) waiter.wake();
  }

  /** Shutdown: every waiting read answers its page now, and no new read waits. */
  close(): void {
    this.closed = true;
    for (const waiters of this.streams.values()) for (const waiter of waiters) waiter.release();
  }

  private remove(waiter: EventWaiter): void {
    const waiters = this.streams.get(waiter.stream);
    if (!waiters?.delete(waiter)) return;
    this.total--;
    if (waiters.size === 0) this.streams.delete(waiter.stream);
  }
}

export interface EventsListener {
  close(): Promise<void>;
}

/**
 * The process's one LISTEN connection, on the primary (postgres.js keeps it outside the pool and
 * reconnects it): each notification wakes its stream's waiters, and each (re)connect wakes them all.
 */
export async function listenForEvents(primary: Sql, waiters: EventWaiters): Promise<EventsListener> {
  const listener = await primary.listen(
    EVENTS_CHANNEL,
    (payload) => waiters.wake(payload),
    () => waiters.wakeAll(),
  );
  return {
    close: async () => {
      await listener.unlisten().catch(() => undefined);
    },
  };
}
