import type { AgentOptions } from 'node:https';
import { pino, type Logger } from 'pino';
import { connectDatabase, errorForLog } from '@lop/db';
import {
  AttemptInFlightError,
  countDeliveryAttempt,
  createDeliveryAgents,
  DELIVERY_QUEUES,
  jobExpirySeconds,
  loadConfig,
  LOOPBACK_ALLOWANCE_WARNING,
  openDeliveryQueue,
  processDeliveryJobs,
  protectorFor,
  retentionSettings,
  startMaintenance,
  traceLogFields,
  webhookSettings,
  type Clock,
  type Config,
  type DeliveryJob,
  type DeliveryProcessor,
  type DeliveryQueue,
  type Resolver,
} from '@lop/domain';

export interface DeliveryWorkerOptions {
  /** Defaults to the process environment. */
  config?: Config;
  logger?: Logger;
  /** Tests move time and answer DNS; production uses the system's. */
  clock?: Clock;
  resolve?: Resolver;
  /** Extra TLS options for the HTTPS agent (a test CA). */
  tls?: AgentOptions;
}

export interface RunningDeliveryWorker {
  queue: DeliveryQueue;
  /** Stops fetching, lets in-flight attempts finish (or releases them), then closes connections. */
  close(): Promise<void>;
}

/**
 * pg-boss workers per queue (one queue per environment); each fetches a batch and runs its
 * attempts in parallel, and fetches again when the whole batch is done. One client's attempts are
 * capped per process (PARTNER_WEBHOOK_CLIENT_CONCURRENCY, at most this many): its jobs come in as
 * one batch while it is under the cap, so a client whose endpoints answer slowly keeps few
 * workers waiting, and the others fetch past its backlog.
 */
const LOCAL_WORKERS = 8;

/**
 * The worker's own logger: errors are logged without the SQL and parameters a failed query carries;
 * a line written inside a traced attempt carries its trace_id and span_id.
 */
export function createWorkerLogger(level: string): Logger {
  return pino({ name: 'delivery-worker', level, mixin: traceLogFields, serializers: { err: (error: unknown) => pino.stdSerializers.err(errorForLog(error) as Error) } });
}

/**
 * The webhook delivery worker: wakes on NOTIFY when a delivery is committed, drains backlogs in
 * parallel batches, and polls only as a backstop and for due retries.
 */
export async function startDeliveryWorker(databaseUrl: string, options: DeliveryWorkerOptions = {}): Promise<RunningDeliveryWorker> {
  const config = options.config ?? loadConfig();
  const logger = options.logger ?? createWorkerLogger(config.LOG_LEVEL);
  const settings = webhookSettings(config, databaseUrl);
  if (settings.destination.allowLoopback) logger.warn(LOOPBACK_ALLOWANCE_WARNING);

  const localConcurrency = Math.min(LOCAL_WORKERS, settings.concurrency);
  const batchSize = Math.ceil(settings.concurrency / localConcurrency);
  // pg-boss allows no more per group than local workers.
  const clientConcurrency = Math.min(settings.clientConcurrency, localConcurrency);
  const queue = await openDeliveryQueue({
    databaseUrl,
    settings: settings.queue,
    role: 'worker',
    applicationName: 'delivery-worker-pgboss',
    poolSize: localConcurrency + 6,
    onError: (error) => logger.error({ err: error }, 'pg-boss error'),
    schedule: true,
  });
  const agents = createDeliveryAgents(options.tls);
  // Each environment has its own queue, workers and connections: production never waits behind sandbox.
  const databases = (['production', 'sandbox'] as const).map((environment) => ({
    environment,
    database: connectDatabase(databaseUrl, { max: Math.min(6, localConcurrency + 2), applicationName: `delivery-worker-${environment}` }),
  }));
  for (const { environment, database } of databases) {
    const processor: DeliveryProcessor = {
      db: database.db,
      queue,
      protector: protectorFor(config),
      policy: settings.policy,
      attempt: { timeoutMs: settings.attemptTimeoutMs, ...settings.destination, resolve: options.resolve, clock: options.clock, agents },
      leaseSeconds: jobExpirySeconds(settings.queue),
    };
    await queue.boss.work<DeliveryJob>(
      DELIVERY_QUEUES[environment],
      {
        batchSize,
        localConcurrency,
        // Per API client (the job's group), in this process: one client's backlog or slow endpoints
        // hold at most this many attempts, and the fetch skips that client's jobs meanwhile (an
        // excess fetched concurrently is handed back at once). pg-boss's database-wide
        // groupConcurrency was tried first: fetches woken by the same NOTIFY all read the same
        // active count, and one client took all 16 slots of a limit of 4.
        localGroupConcurrency: clientConcurrency,
        burstWhenBatchFull: true,
        pollingIntervalSeconds: settings.queue.pollIntervalSeconds,
        notifyPollingIntervalSeconds: settings.queue.pollIntervalSeconds,
        perJobResults: true,
      },
      async (jobs) => {
        const results = await processDeliveryJobs(processor, jobs);
        return jobs.map((job, i) => {
          const result = results[i];
          if (result.status === 'fulfilled') {
            countDeliveryAttempt(result.value);
            logger.debug({ delivery_id: job.data.delivery_id, attempt: job.data.attempt, outcome: result.value }, 'delivery attempt');
            return { id: job.id, status: 'completed' as const };
          }
          // Not a verdict on the receiver: the job is released and pg-boss runs it again later. That
          // run never sends a second request for the same attempt: a claimed attempt is completed as
          // interrupted and the next one waits for the schedule (libs/domain/src/webhooks/delivery-store.ts).
          countDeliveryAttempt('released');
          if (result.reason instanceof AttemptInFlightError) logger.debug({ delivery_id: job.data.delivery_id, attempt: job.data.attempt }, 'attempt still in flight elsewhere; job released');
          else logger.error({ delivery_id: job.data.delivery_id, attempt: job.data.attempt, err: result.reason }, 'internal error in a delivery job; job released');
          return { id: job.id, status: 'failed' as const, output: { message: (result.reason as Error).message } };
        });
      },
    );
  }
  // The retention pass: scheduled by every worker, run by one of them at a time (maintenance-job.ts).
  await startMaintenance(queue.boss, {
    sql: databases[0].database.sql,
    settings: retentionSettings(config),
    onPass: (outcome) =>
      'error' in outcome ? logger.error({ err: outcome.error }, 'retention pass failed; pg-boss retries it') : logger.info({ pruned: outcome.pruned, seconds: outcome.seconds }, 'retention pass'),
  });
  logger.info({ batchSize, localConcurrency, clientConcurrency }, 'webhook delivery worker started (one queue per environment)');

  let closing: Promise<void> | undefined;
  return {
    queue,
    close: () =>
      (closing ??= (async () => {
        await queue.boss.stop({ graceful: true, timeout: settings.attemptTimeoutMs + 5_000 });
        agents.destroy();
        await Promise.all(databases.map(({ database }) => database.close()));
      })()),
  };
}
