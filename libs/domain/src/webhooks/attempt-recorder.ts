import type { Database } from '@lop/db';
import { claimAttempt, claimAttempts, completeAttempt, completeAttempts, type AttemptClaim, type AttemptCompletion } from './delivery-store';
import type { DeliveryQueue } from './delivery-queue';

/**
 * How a delivery run writes its attempt to the log (delivery-store.ts): the claim before the
 * request leaves, the completion after. `direct` writes each on its own (a test send, a single
 * attempt); `batching` gathers the claims and completions of the attempts a worker runs at the
 * same time and writes each group in one statement and one commit, so a backlog costs the
 * database a few commits per batch instead of two per attempt. Either way each attempt waits for
 * its own write to be committed: the claim is in the log before its request leaves.
 */
export interface AttemptRecorder {
  claim(claim: AttemptClaim): Promise<boolean>;
  complete(completion: AttemptCompletion): Promise<boolean>;
}

export function directRecorder(db: Database, queue: DeliveryQueue | null): AttemptRecorder {
  return {
    claim: (claim) => claimAttempt(db, claim),
    complete: ({ verdict, next }) => completeAttempt(db, queue, verdict, next),
  };
}

export interface BatchingOptions {
  /** The most rows one statement carries. */
  maxBatch?: number;
  /** Statements of one kind in flight at once: while they run, the next group gathers. */
  maxInFlight?: number;
}

/**
 * Gathers writes until the current ones are written (at most `maxInFlight` groups of each kind in
 * flight), then writes what gathered in one statement. A group the database refuses is written
 * again one by one, so one refused row (a trigger, a constraint) fails only its own attempt.
 */
export function batchingRecorder(db: Database, queue: DeliveryQueue | null, options: BatchingOptions = {}): AttemptRecorder {
  const claims = new Batcher<AttemptClaim>(
    (claim) => claim.deliveryId,
    (group) => claimAttempts(db, group),
    (claim) => claimAttempt(db, claim),
    options,
  );
  const completions = new Batcher<AttemptCompletion>(
    (completion) => completion.verdict.deliveryId,
    (group) => completeAttempts(db, queue, group),
    ({ verdict, next }) => completeAttempt(db, queue, verdict, next),
    options,
  );
  return { claim: (claim) => claims.add(claim), complete: (completion) => completions.add(completion) };
}

interface Waiting<T> {
  item: T;
  resolve(value: boolean): void;
  reject(error: unknown): void;
}

class Batcher<T> {
  private waiting: Waiting<T>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  constructor(
    private readonly keyOf: (item: T) => string,
    private readonly writeGroup: (items: T[]) => Promise<boolean[]>,
    private readonly writeOne: (item: T) => Promise<boolean>,
    options: BatchingOptions,
  ) {
    this.maxBatch = options.maxBatch ?? 256;
    this.maxInFlight = options.maxInFlight ?? 2;
  }

  add(item: T): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** After the current macrotask, so the attempts started together are written together. */
  private schedule() {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.waiting.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush() {
    if (this.inFlight >= this.maxInFlight || this.waiting.length === 0) return;
    // One row per delivery in a statement: a second write for the same delivery waits for the next.
    const group: Waiting<T>[] = [];
    const later: Waiting<T>[] = [];
    const keys = new Set<string>();
    for (const entry of this.waiting) {
      const key = this.keyOf(entry.item);
      if (group.length < this.maxBatch && !keys.has(key)) {
        keys.add(key);
        group.push(entry);
      } else later.push(entry);
    }
    this.waiting = later;
    this.inFlight++;
    void this.write(group).finally(() => {
      this.inFlight--;
      this.schedule();
    });
    this.schedule();
  }

  private async write(group: Waiting<T>[]) {
    try {
      const results = group.length === 1 ? [await this.writeOne(group[0].item)] : await this.writeGroup(group.map((entry) => entry.item));
      group.forEach((entry, i) => entry.resolve(results[i]));
    } catch (error) {
      if (group.length === 1) return group[0].reject(error);
      await Promise.all(group.map((entry) => this.writeOne(entry.item).then(entry.resolve, entry.reject)));
    }
  }
}
