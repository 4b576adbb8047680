import { setMaxListeners } from 'node:events';
import type { Job, PgBoss } from 'pg-boss';
import { restoreDeliveryJobs } from '@lop/domain';

/**
 * One queue's attempt slots in this process, shared fairly and without idling (docs/operations.md,
 * "Fair delivery"). Jobs are fetched for the slots that are free, and each attempt frees its own
 * slot when it ends, so one slow attempt never holds a fetch back.
 *
 * Every job belongs to its API client's pg-boss group. A client is *entitled* to `clientCap`
 * attempts in flight; past that it only *borrows* slots nobody else's waiting job wants:
 *
 * 1. A round first fetches with the clients at their cap skipped (`ignoreGroups`) and pg-boss's
 *    `groupConcurrency` keeping the others within theirs (the database's count of active jobs;
 *    this process's exact count hands back, unstarted, whatever a concurrent fetch overshot).
 *    A fetch that served someone is followed by another, which looks past the clients it served.
 * 2. Only a fetch that finds nobody under its cap waiting lets clients borrow, with a fetch that
 *    skips nobody. Until a NOTIFY, the poll or the poll interval says new jobs may have come,
 *    the next rounds borrow at once instead of reading past the borrower's whole backlog again.
 * 3. Borrowing never takes the last `reserve` slots: a client arriving while another's slow
 *    backlog borrows finds a slot at once, instead of waiting for a borrowed attempt to end
 *    (up to the attempt timeout).
 *
 * So a client alone gets `slots - reserve` attempts in flight, and while others wait each gets
 * its cap before anyone borrows. Borrowed attempts are never stopped: they return their slots as
 * they end, and from then on the caps bite.
 */
export interface DispatcherOptions<T> {
  boss: PgBoss;
  queue: string;
  slots: number;
  clientCap: number;
  /** Slots borrowing never takes. */
  reserve: number;
  /** Backstop poll (due retries send no NOTIFY). */
  pollIntervalMs: number;
  /** Runs a batch of jobs, calling `settled` as each ends: true = done, an error = release it to pg-boss. */
  run(jobs: Job<T>[], signal: AbortSignal, settled: (index: number, outcome: true | Error) => void): Promise<void>;
  onError(error: unknown): void;
}

export interface DispatcherStats {
  inFlight: number;
  /** Attempts in flight per client (group). */
  byClient: Map<string, number>;
}


/** Fetches in flight at once: a fetch looking past other clients' backlogs takes a while. */
const MAX_ROUNDS = 3;

export class FairDispatcher<T> {
  private readonly byClient = new Map<string, number>();
  private inFlight = 0;
  /** Slots asked for by fetches still running. */
  private asked = 0;
  private rounds = 0;
  private stopping = false;
  private readonly abort = new AbortController();
  private readonly running = new Set<Promise<void>>();
  /** The last round found more than it could take: fetch again as soon as slots free. */
  private backlog = false;
  /**
   * Jobs may have arrived since a fetch last found no client under its cap waiting. While it is
   * false the clients at their cap borrow without that fetch, which would read past their whole
   * backlog to find nothing; a NOTIFY, the poll, or the poll interval passing sets it again.
   */
  private newJobs = true;
  private lastLook = 0;
  private timer: NodeJS.Timeout | undefined;
  private idle: (() => void)[] = [];
  private readonly settler: JobSettler;
  private readonly minRound: number;

  constructor(private readonly options: DispatcherOptions<T>) {
    this.settler = new JobSettler(options.boss, options.queue, options.onError);
    // Every attempt in flight listens to this one signal (stop aborts them all): up to `slots` at
    // once is expected, not the leak Node warns of past 10.
    setMaxListeners(options.slots + 10, this.abort.signal);
    // Enough free slots to make a fetch worth its statements while a backlog drains: every fetch,
    // and the claims and completions of the attempts it starts together, cost PostgreSQL about the
    // same whatever their size (a quarter of the slots drained 10,000 deliveries 10-17 % faster
    // than an eighth, three runs each). A NOTIFY or the poll still fetches for any free slot.
    this.minRound = Math.max(1, Math.floor(options.slots / 4));
  }

  start() {
    this.wake();
  }

  stats(): DispatcherStats {
    return { inFlight: this.inFlight, byClient: new Map(this.byClient) };
  }

  /** A NOTIFY for this queue, a reconnected listener or the poll: new jobs may wait, look now. */
  wake() {
    this.newJobs = true;
    this.look();
  }

  /** Fetches while slots are free (at most MAX_ROUNDS fetches at once). */
  private look() {
    if (this.stopping || this.rounds >= MAX_ROUNDS || this.free() <= 0) return;
    // Another fetch is running and few slots are free: let them gather.
    if (this.rounds > 0 && this.free() < this.minRound) return;
    this.rounds++;
    const round = this.round()
      .catch((error: unknown) => {
        this.backlog = false;
        this.options.onError(error);
      })
      .finally(() => {
        this.rounds--;
        this.running.delete(round);
        if (this.rounds === 0) this.schedulePoll();
      });
    this.running.add(round);
  }

  private schedulePoll() {
    clearTimeout(this.timer);
    if (this.stopping) return;
    this.timer = setTimeout(() => this.wake(), this.options.pollIntervalMs);
    this.timer.unref();
  }

  private free() {
    return this.options.slots - this.inFlight - this.asked;
  }

  private count(client: string | null | undefined) {
    return client ? (this.byClient.get(client) ?? 0) : 0;
  }

  private atCap() {
    return [...this.byClient].filter(([, n]) => n >= this.options.clientCap).map(([client]) => client);
  }

  /** A fetch for the free slots: entitled jobs, or borrowed ones when nobody under its cap waits (see the class comment). */
  private async round() {
    const { boss, queue, clientCap } = this.options;
    const want = this.free();
    if (want <= 0) return;
    if (Date.now() - this.lastLook >= this.options.pollIntervalMs) this.newJobs = true;
    if (!this.newJobs && this.atCap().length > 0) return this.borrow();
    this.newJobs = false;
    this.lastLook = Date.now();
    this.asked += want;
    let fetched: Job<T>[];
    try {
      // Skips the clients at their cap here; the database's count of active jobs per group
      // (groupConcurrency) keeps the rest within theirs inside the batch.
      fetched = await boss.fetch<T>(queue, { batchSize: want, ignoreGroups: this.atCap(), groupConcurrency: clientCap });
    } finally {
      this.asked -= want;
    }
    // The exact count is this process's: a concurrent fetch may have served the same client.
    const entitled: Job<T>[] = [];
    const excess: Job<T>[] = [];
    const taken = new Map<string, number>();
    for (const job of fetched) {
      const n = job.groupId ? this.count(job.groupId) + (taken.get(job.groupId) ?? 0) : 0;
      if (job.groupId && n >= clientCap) excess.push(job);
      else {
        entitled.push(job);
        if (job.groupId) taken.set(job.groupId, (taken.get(job.groupId) ?? 0) + 1);
      }
    }
    if (excess.length > 0) await restoreDeliveryJobs(boss, queue, excess.map((job) => job.id));
    this.launch(entitled);
    if (fetched.length >= want || entitled.length > 0) {
      // Full, or short because the clients it served reached their caps: look past them.
      this.backlog = true;
      this.newJobs = true;
      return this.look();
    }
    return this.borrow();
  }

  private async borrow() {
    const { boss, queue, slots, reserve } = this.options;
    // Nobody under its cap has anything waiting: clients at their cap may borrow what is free,
    // short of the reserve. (The database's count of a client's active jobs lags this process's
    // by the completions not yet written, so a client may be at its cap there and not here.)
    if (this.stopping) return;
    const borrow = Math.min(this.free(), slots - reserve - this.inFlight - this.asked);
    // The clients at their cap may have more waiting: look again when their attempts end.
    if (borrow <= 0) return void (this.backlog = true);
    this.asked += borrow;
    let borrowed: Job<T>[];
    try {
      borrowed = await boss.fetch<T>(queue, { batchSize: borrow });
    } finally {
      this.asked -= borrow;
    }
    this.launch(borrowed);
    this.backlog = borrowed.length >= borrow;
    // Nothing waits at all: the next NOTIFY or poll looks again.
    if (borrowed.length === 0) this.newJobs = false;
  }

  private launch(jobs: Job<T>[]) {
    if (jobs.length === 0) return;
    for (const job of jobs) {
      this.inFlight++;
      if (job.groupId) this.byClient.set(job.groupId, this.count(job.groupId) + 1);
    }
    const release = (job: Job<T>) => {
      this.inFlight--;
      if (job.groupId) {
        const n = this.count(job.groupId) - 1;
        if (n > 0) this.byClient.set(job.groupId, n);
        else this.byClient.delete(job.groupId);
      }
      if (this.inFlight === 0) for (const resolve of this.idle.splice(0)) resolve();
      // A draining backlog is fetched again once enough slots are free (or none is busy).
      if (this.backlog && (this.free() >= this.minRound || this.inFlight === 0)) this.look();
    };
    const done = new Set<number>();
    const settled = (index: number, outcome: true | Error) => {
      if (done.has(index)) return;
      done.add(index);
      const job = jobs[index];
      this.settler.settle(job, outcome);
      release(job);
    };
    this.options.run(jobs, this.abort.signal, settled).then(
      () => jobs.forEach((_, i) => settled(i, new Error('the job was not settled by its run'))),
      (error: unknown) => jobs.forEach((_, i) => settled(i, error instanceof Error ? error : new Error(String(error)))),
    );
  }

  /**
   * Stops fetching, waits up to `graceMs` for the attempts in flight, then aborts the rest (each
   * is completed as interrupted by its run) and waits for their settlement to be written.
   */
  async stop(graceMs: number) {
    this.stopping = true;
    clearTimeout(this.timer);
    await Promise.all(this.running);
    if (!(await this.drained(graceMs))) {
      this.abort.abort();
      await this.drained(5_000);
    }
    await this.settler.drain();
  }

  private drained(ms: number): Promise<boolean> {
    if (this.inFlight === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}

/**
 * Completes finished jobs in pg-boss, and releases failed ones, a group per statement: what ends
 * while a statement runs is settled by the next. Fenced to the attempt fetched (its retryCount),
 * so a job pg-boss has meanwhile expired and handed to another worker is left alone.
 */
class JobSettler {
  private completed: Job<unknown>[] = [];
  private failed: { job: Job<unknown>; error: Error }[] = [];
  private writing: Promise<void> | undefined;

  constructor(
    private readonly boss: PgBoss,
    private readonly queue: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  settle(job: Job<unknown>, outcome: true | Error) {
    if (outcome === true) this.completed.push(job);
    else this.failed.push({ job, error: outcome });
    this.writing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.write());
  }

  private async write(): Promise<void> {
    while (this.completed.length > 0 || this.failed.length > 0) {
      const completed = this.completed.splice(0);
      const failed = this.failed.splice(0);
      const attempt = (job: Job<unknown>) => ({ id: job.id, retryCount: job.retryCount });
      try {
        if (completed.length > 0) await this.boss.complete(this.queue, completed.map(attempt));
        for (const [message, jobs] of groupBy(failed, ({ error }) => error.message)) await this.boss.fail(this.queue, jobs.map(({ job }) => attempt(job)), { message });
      } catch (error) {
        // Left active: pg-boss expires them and runs them again; the attempt log decides what that run does.
        this.onError(error);
      }
    }
    this.writing = undefined;
  }

  async drain() {
    while (this.writing) await this.writing;
  }
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}
