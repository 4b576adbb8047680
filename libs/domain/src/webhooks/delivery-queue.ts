import type { Environment } from '@lop/contract';
import { sql } from 'drizzle-orm';
import { fromDrizzle, PgBoss, type ConstructorOptions, type Queue } from 'pg-boss';
import type { Sql, Transaction } from '@lop/db';

/**
 * The pg-boss queues that wake a worker for each delivery attempt. A job is only a wake-up call
 * (`{delivery_id, attempt}`); the delivery row decides whether that attempt is still due, so a
 * job that runs twice (crash, expiry) can never start a second attempt chain.
 *
 * One queue per environment, each worked by its own workers: production deliveries never wait
 * behind sandbox ones. Production keeps the queue's original name, so jobs enqueued before the
 * split (of either environment) are still run. Every job belongs to the pg-boss group of its API
 * client: workers fetch with a per-group concurrency limit, so one client's backlog or slow
 * endpoints occupy at most that many attempts in flight and other clients' jobs are fetched past
 * them (docs/webhooks.md, "Fair delivery").
 */
export const DELIVERY_QUEUES: Readonly<Record<Environment, string>> = { production: 'webhook-delivery', sandbox: 'webhook-delivery-sandbox' };

export interface DeliveryJob {
  delivery_id: string;
  /** 1-based number of the attempt this job is for. */
  attempt: number;
}

export interface DeliveryQueueSettings {
  attemptTimeoutSeconds: number;
  /** How often workers look for due retries (deferred jobs send no NOTIFY). */
  pollIntervalSeconds: number;
  /** How long delivery history is kept after a delivery finished (PARTNER_WEBHOOK_RETENTION_DAYS). */
  historyRetentionSeconds: number;
}

/**
 * A job lives while its attempt could still be running: the attempt's own timeout plus a margin
 * for the database work around it. A worker killed mid-attempt leaves the job active; pg-boss
 * expires it after this and hands it to another worker.
 */
export function jobExpirySeconds(settings: Pick<DeliveryQueueSettings, 'attemptTimeoutSeconds'>): number {
  return Math.ceil(settings.attemptTimeoutSeconds) + 5;
}

/**
 * Queue options. pg-boss retries only cover a handler that failed to finish (database down,
 * shutdown): the delivery schedule itself is ours, one job per attempt. `notify` makes an
 * insert wake listening workers at commit (LISTEN/NOTIFY) instead of at their next poll.
 */
export function deliveryQueueOptions(settings: DeliveryQueueSettings): Omit<Queue, 'name'> {
  return {
    notify: true,
    expireInSeconds: jobExpirySeconds(settings),
    retryLimit: 100,
    retryDelay: 2,
    retryBackoff: true,
    retryDelayMax: 300,
    // pg-boss keeps nothing about a delivery longer than the delivery history does (retention job,
    // libs/domain/src/retention). Delivery rows keep the history, so a finished job (a spent wake-up
    // call) goes after a day, or sooner if the history does; a job still waiting to start goes once
    // it has waited the whole window past its start time (its worker was gone all that while).
    deleteAfterSeconds: Math.min(86_400, settings.historyRetentionSeconds),
    retentionSeconds: settings.historyRetentionSeconds,
  };
}

export interface EnqueueRequest extends DeliveryJob {
  /** Seconds from now (database time) before the attempt may start; omitted = at once. */
  startAfterSeconds?: number;
  /** The subscription's environment: which queue. */
  environment: Environment;
  /** The subscription's API client: the job's fairness group. */
  clientId: string;
}

/** Sends delivery jobs through a started pg-boss instance, inside the caller's transaction. */
export class DeliveryQueue {
  constructor(readonly boss: PgBoss) {}

  /** Inserts the jobs with the transaction's own connection: they exist only if it commits. */
  async enqueue(tx: Transaction, requests: EnqueueRequest[]): Promise<void> {
    for (const environment of ['production', 'sandbox'] as const) {
      const mine = requests.filter((r) => r.environment === environment);
      if (mine.length === 0) continue;
      await this.boss.insert(
        DELIVERY_QUEUES[environment],
        mine.map((r) => ({
          data: { delivery_id: r.delivery_id, attempt: r.attempt } satisfies DeliveryJob,
          group: { id: r.clientId },
          ...(r.startAfterSeconds && r.startAfterSeconds > 0 ? { startAfter: r.startAfterSeconds } : {}),
        })),
        { db: fromDrizzle(tx, sql) },
      );
    }
  }
}

/**
 * The channel pg-boss NOTIFYs, with the queue's name as payload, when a job of a `notify` queue
 * is committed: the delivery workers LISTEN on it themselves (their dispatchers fetch outside
 * pg-boss's work loop). Computed by the database as pg-boss 12 computes it for its default
 * `pgboss` schema (plans.notifyChannelSql); the wake-up tests fail if that ever changes.
 */
export async function deliveryWakeUpChannel(sql: Sql): Promise<string> {
  const [{ channel }] = await sql<{ channel: string }[]>`select 'pgboss_' || left(encode(sha224('pgboss'::bytea), 'hex'), 24) as channel`;
  return channel;
}

/**
 * Hands fetched jobs back unstarted, as pg-boss's own per-group limit does with an excess it
 * fetched (its restore, which pg-boss 12 does not export): state `created` again, `started_on`
 * cleared so the next fetch does not count a retry. Only jobs still active, i.e. still this
 * fetch's: the dispatcher calls it before the jobs run.
 */
export async function restoreDeliveryJobs(boss: PgBoss, queueName: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await boss.getDb().executeSql(`update pgboss.job set state = 'created', started_on = null, heartbeat_on = null where name = $1 and id = any($2::uuid[]) and state = 'active'`, [queueName, ids]);
}

export interface OpenQueueOptions {
  databaseUrl: string;
  settings: DeliveryQueueSettings;
  /**
   * `sender`: enqueue only (API, admin CLI) — no maintenance, no listener, a two-connection pool.
   * `worker`: also supervises expiry and listens for NOTIFY wake-ups.
   */
  role: 'sender' | 'worker';
  applicationName?: string;
  poolSize?: number;
  onError?: (error: Error) => void;
  /** Run pg-boss's cron pass in this instance (workers only): it turns schedules into jobs. */
  schedule?: boolean;
}

/**
 * Starts pg-boss (which installs or migrates its own `pgboss` schema, under its own lock) and
 * makes sure the delivery queue exists with the current options.
 */
export async function openDeliveryQueue(options: OpenQueueOptions): Promise<DeliveryQueue> {
  const worker = options.role === 'worker';
  const expiry = jobExpirySeconds(options.settings);
  const config: ConstructorOptions = {
    connectionString: options.databaseUrl,
    application_name: options.applicationName ?? `pgboss-${options.role}`,
    max: options.poolSize ?? (worker ? 6 : 2),
    schedule: worker && options.schedule === true,
    supervise: worker,
    useListenNotify: worker,
    // Without bitmap scans a fetch reads the queue in order through pg-boss's job_i11 and stops at
    // its batch. A backlog arrives faster than the statistics count it: expecting a handful of
    // queued jobs, the planner bitmap-scanned and sorted the whole backlog instead, once per
    // fetch: 6.6 ms a fetch at 10,000 queued, against 0.6 ms (docs/operations.md, "Fair delivery").
    ...(worker ? { options: '-c synchronous_commit=off -c enable_bitmapscan=off' } : {}),
    // Expired jobs (a worker killed mid-attempt) are found by the supervisor's monitor pass.
    ...(worker ? { superviseIntervalSeconds: Math.min(60, expiry), monitorIntervalSeconds: Math.min(60, expiry) } : {}),
  };
  const boss = new PgBoss(config);
  boss.on('error', options.onError ?? (() => undefined));
  await boss.start();
  const queueOptions = deliveryQueueOptions(options.settings);
  for (const name of Object.values(DELIVERY_QUEUES)) {
    await boss.createQueue(name, queueOptions);
    // createQueue keeps an existing queue's options; the settings of the newest start win.
    if (worker) await boss.updateQueue(name, queueOptions);
  }
  return new DeliveryQueue(boss);
}

/** Starts the queue on first use only; `close` stops it if it was ever started. */
export function lazyDeliveryQueue(options: OpenQueueOptions): { get: () => Promise<DeliveryQueue>; close: () => Promise<void> } {
  let opening: Promise<DeliveryQueue> | undefined;
  return {
    get: () => (opening ??= openDeliveryQueue(options)),
    close: async () => {
      if (!opening) return;
      const queue = await opening.catch(() => undefined);
      await queue?.boss.stop({ graceful: false });
    },
  };
}
