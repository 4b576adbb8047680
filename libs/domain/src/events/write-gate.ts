import { PartnerError } from '../http/errors';
import type { Stream } from './append';

export interface WriteGateOptions {
  /** Writes of one stream that may hold a pooled connection at once, in this process. */
  concurrency: number;
  /** Single statements of any other lane of the stream (spending its rate budget) that may hold one at once; default 2. */
  laneConcurrency?: number;
  /** How long a write may wait for a slot before it is refused. */
  maxWaitMs?: number;
  /** Writes of one stream that may wait at once; the next one is refused without waiting. */
  maxWaiting?: number;
}

/**
 * Rides out an ordinary burst (two slots serve a few dozen creates in that time), and short against
 * the 1 s within which a refused partner must hear so (docs/operations.md).
 */
const DEFAULT_MAX_WAIT_MS = 500;
const DEFAULT_MAX_WAITING = 64;
const DEFAULT_LANE_CONCURRENCY = 2;
const RETRY_AFTER_SECONDS = 1;

const busy = () =>
  new PartnerError('rate_limited', `Too many writes of this API client are running at once; retry after ${RETRY_AFTER_SECONDS} second.`, {
    details: [{ issue: 'too_many_concurrent_writes' }],
    headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  });

interface StreamSlots {
  running: number;
  /** Each hands the running slot of a finished write over to a waiting one. */
  waiting: (() => void)[];
}

/**
 * A per-(client, environment) concurrency limit on partner writes, taken BEFORE a pooled connection.
 *
 * Every write that appends to a client's event stream ends on that stream's counter row
 * (appendEvents), whose lock is held from the numbering to the commit: the commits of one client
 * pass it one after another however many connections they hold. Without this gate a flooding client parked one pooled
 * connection per waiting write and other clients' reads queued behind them. With it, a client
 * holds at most `concurrency` connections per replica for its writes; a few more writes wait here
 * (no connection) for at most `maxWaitMs`, and the rest are refused at once with 429
 * `rate_limited` and Retry-After. Across replicas, the API pool's `lock_timeout` bounds the wait
 * for the row itself (docs/operations.md).
 */
export class StreamWriteGate {
  private readonly streams = new Map<string, StreamSlots>();
  private readonly maxWaitMs: number;
  private readonly maxWaiting: number;

  constructor(private readonly options: WriteGateOptions) {
    this.maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    this.maxWaiting = options.maxWaiting ?? DEFAULT_MAX_WAITING;
  }

  /**
   * Runs `work` holding one of the stream's slots, or throws 429 `rate_limited` (too_many_concurrent_writes).
   * A `lane` has slots of its own: a one-statement step (spending the rate budget) must not wait
   * behind the stream's transactions, which would double a refused request's wait. Such a step is
   * brief: its lane needs fewer slots than the writes (`laneConcurrency`).
   */
  async run<T>(stream: Stream, work: () => Promise<T>, lane = 'writes'): Promise<T> {
    const id = `${stream.clientId}:${stream.environment}:${lane}`;
    let slots = this.streams.get(id);
    if (!slots) this.streams.set(id, (slots = { running: 0, waiting: [] }));
    const concurrency = lane === 'writes' ? this.options.concurrency : (this.options.laneConcurrency ?? DEFAULT_LANE_CONCURRENCY);
    if (slots.running < concurrency) slots.running++;
    else await this.wait(slots);
    try {
      return await work();
    } finally {
      const next = slots.waiting.shift();
      if (next) next();
      else if (--slots.running === 0) this.streams.delete(id);
    }
  }

  private wait(slots: StreamSlots): Promise<void> {
    if (slots.waiting.length >= this.maxWaiting) return Promise.reject(busy());
    return new Promise((resolve, reject) => {
      const handOver = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        slots.waiting.splice(slots.waiting.indexOf(handOver), 1);
        reject(busy());
      }, this.maxWaitMs);
      slots.waiting.push(handOver);
    });
  }
}
