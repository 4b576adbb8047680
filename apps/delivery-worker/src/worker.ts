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
  batchingRecorder,
  deliveryWakeUpChannel,
  processDeliveryJobs,
  protectorFor,
  resumeHeldDeliveries,
  startReencryptionJob,
  watchKeyring,
  ensureEventPartitions,
  EVENTS_HORIZON_WARNING_DAYS,
  horizonSeconds,
  retentionSettings,
  startMaintenance,
  type EventPartitionsState,
  traceLogFields,
  webhookSettings,
  type Clock,
  type Config,
  type DeliveryJob,
  type DeliveryProcessor,
  type DeliveryQueue,
  type Resolver,
} from '@lop/domain';
import { FairDispatcher } from './dispatcher';

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
  /** The step a close in progress is waiting for, for a shutdown that outlives its deadline. */
  closingStep(): string | undefined;
}

/**
 * Attempt slots per queue (one queue per environment) are shared by a FairDispatcher: each
 * attempt frees its slot when it ends, one client is entitled to PARTNER_WEBHOOK_CLIENT_CONCURRENCY
 * of them and borrows the rest only while no other client's job waits, never the last `reserve`.
 */
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

  const slots = settings.concurrency;
  const clientConcurrency = Math.min(settings.clientConcurrency, slots);
  // Borrowing leaves a newcomer this many slots (docs/operations.md, "Fair delivery").
  const reserve = slots > clientConcurrency ? clientConcurrency : 0;
  const queue = await openDeliveryQueue({
    databaseUrl,
    settings: settings.queue,
    role: 'worker',
    applicationName: 'delivery-worker-pgboss',
    poolSize: 6,
    onError: (error) => logger.error({ err: error }, 'pg-boss error'),
    schedule: true,
  });
  const agents = createDeliveryAgents(options.tls);
  // Each environment has its own queue, workers and connections: production never waits behind sandbox.
  const databases = (['production', 'sandbox'] as const).map((environment) => ({
    environment,
    database: connectDatabase(databaseUrl, { max: 6, applicationName: `delivery-worker-${environment}` }),
  }));
  const dispatchers = new Map<string, FairDispatcher<DeliveryJob>>();
  // One protector for the process, its keyring reloaded on every rotation (security/key-rotation.ts).
  const protector = protectorFor(config);
  const keyring = await watchKeyring(databases[0].database.sql, protector, { onError: (error) => logger.error({ err: error, component: 'keyring' }, 'encryption keyring not loaded') });
  for (const { environment, database } of databases) {
    const processor: DeliveryProcessor = {
      db: database.db,
      queue,
      protector,
      policy: settings.policy,
      attempt: { timeoutMs: settings.attemptTimeoutMs, ...settings.destination, resolve: options.resolve, clock: options.clock, agents },
      leaseSeconds: jobExpirySeconds(settings.queue),
      // The claims and completions of the attempts running together go in one statement each.
      recorder: batchingRecorder(database.db, queue),
    };
    const dispatcher = new FairDispatcher<DeliveryJob>({
      boss: queue.boss,
      queue: DELIVERY_QUEUES[environment],
      slots,
      clientCap: clientConcurrency,
      reserve,
      pollIntervalMs: settings.queue.pollIntervalSeconds * 1000,
      onError: (error) => logger.error({ err: error, environment }, 'delivery dispatcher error'),
      run: async (jobs, signal, settled) => {
        await processDeliveryJobs(
          processor,
          jobs.map((job) => ({ data: job.data, signal })),
          (i, result) => {
            const job = jobs[i];
            if (result.status === 'fulfilled') {
              countDeliveryAttempt(result.value);
              logger.debug({ delivery_id: job.data.delivery_id, attempt: job.data.attempt, outcome: result.value }, 'delivery attempt');
              return settled(i, true);
            }
            // Not a verdict on the receiver: the job is released and pg-boss runs it again later. That
            // run never sends a second request for the same attempt: a claimed attempt is completed as
            // interrupted and the next one waits for the schedule (libs/domain/src/webhooks/delivery-store.ts).
            countDeliveryAttempt('released');
            if (result.reason instanceof AttemptInFlightError) logger.debug({ delivery_id: job.data.delivery_id, attempt: job.data.attempt }, 'attempt still in flight elsewhere; job released');
            else logger.error({ delivery_id: job.data.delivery_id, attempt: job.data.attempt, err: result.reason }, 'internal error in a delivery job; job released');
            settled(i, result.reason instanceof Error ? result.reason : new Error(String(result.reason)));
          },
        );
      },
    });
    dispatchers.set(DELIVERY_QUEUES[environment], dispatcher);
  }
  // A committed job wakes its queue's dispatcher at once (pg-boss's NOTIFY, sent by queues with
  // `notify`); after a reconnect every dispatcher looks, for what was sent meanwhile.
  const listener = await databases[0].database.sql.listen(
    await deliveryWakeUpChannel(databases[0].database.sql),
    (name) => dispatchers.get(name)?.wake(),
    () => dispatchers.forEach((dispatcher) => dispatcher.wake()),
  );
  // events' partitions for this month and the next ones before anything else: a new database (a
  // test's, npm start's) or one whose maintenance stopped must never refuse an order create
  // (events/partitions.ts). The maintenance pass keeps them ahead from then on.
  const reportPartitions = (state: EventPartitionsState) => {
    const seconds = horizonSeconds(state.horizon);
    if (state.created.length > 0) logger.info({ created: state.created }, 'events partitions created');
    if (seconds !== undefined && seconds < EVENTS_HORIZON_WARNING_DAYS * 86_400) {
      logger.warn({ horizon: state.horizon, days: Math.floor(seconds / 86_400) }, 'events partitions end soon: events created after the horizon cannot be inserted');
    }
  };
  reportPartitions(await ensureEventPartitions(databases[0].database.sql));
  // The maintenance pass: scheduled by every worker, run by one of them at a time (maintenance-job.ts).
  await startMaintenance(queue.boss, {
    sql: databases[0].database.sql,
    settings: retentionSettings(config),
    onPass: (outcome) => {
      if ('error' in outcome) return logger.error({ err: outcome.error }, 'maintenance pass failed; pg-boss retries it');
      reportPartitions(outcome.eventPartitions);
      logger.info(
        { pruned: outcome.pruned, seconds: outcome.seconds, partitionsCreated: outcome.partitionsCreated, partitionsDropped: outcome.partitionsDropped, auditSealed: outcome.auditSealed },
        'retention pass',
      );
    },
    onStartPartitions: (outcome) =>
      'error' in outcome
        ? logger.error({ err: outcome.error }, 'could not make partitions ahead at start; the next maintenance pass tries again')
        : outcome.created.length > 0 && logger.info({ created: outcome.created }, 'partitions made ahead'),
  });
  // Re-encrypts rows sealed with older key versions after a rotation (docs/operations.md § Key and secret rotation).
  const reencryption = await startReencryptionJob(databases[0].database.sql, protector, {
    batchSize: config.PARTNER_KEY_ROTATION_BATCH_SIZE,
    pauseMs: config.PARTNER_KEY_ROTATION_PAUSE_MS,
    onBatch: (batch) => logger.debug(batch, 're-encrypted a batch'),
    onRun: (outcome) => logger.info(outcome, 're-encryption run'),
    onError: (error) => logger.error({ err: error }, 're-encryption run failed; the next wake-up resumes it'),
  });
  void reencryption.runNow();
  // Held deliveries (their client had no active key) go on once a key is active again. Every worker
  // runs the pass; it takes each delivery once (SKIP LOCKED). Not chained to a delivery's own job,
  // so a held delivery costs nothing while it waits, and spends none of its attempts.
  let resuming: Promise<void> | undefined;
  const resumeHeld = () => {
    resuming ??= resumeHeldDeliveries(databases[0].database.db, queue)
      .then((resumed) => void (resumed > 0 && logger.info({ resumed }, 'held webhook deliveries resumed: their client has an active key again')))
      .catch((error: unknown) => logger.error({ err: error }, 'could not resume held webhook deliveries; the next pass tries again'))
      .finally(() => (resuming = undefined));
  };
  const heldTimer = setInterval(resumeHeld, settings.heldRecheckSeconds * 1000);
  heldTimer.unref();
  // Attempts start last, once everything close() stops exists: a signal that arrives while the
  // worker starts is honoured when start-up ends (main.ts), and until then nothing is in flight.
  dispatchers.forEach((dispatcher) => dispatcher.start());
  logger.info({ slots, clientConcurrency, reserve }, 'webhook delivery worker started (one queue per environment)');

  let closing: Promise<void> | undefined;
  let closingStep: string | undefined;
  const step = (name: string) => void (closingStep = name);
  return {
    queue,
    closingStep: () => closingStep,
    close: () =>
      (closing ??= (async () => {
        clearInterval(heldTimer);
        step('the held-deliveries pass in progress');
        await resuming;
        step('the deliveries listener');
        await listener.unlisten();
        step('the re-encryption job');
        await reencryption.close();
        step('the keyring listener');
        await keyring.close();
        step('the attempts in flight');
        await Promise.all([...dispatchers.values()].map((dispatcher) => dispatcher.stop(settings.attemptTimeoutMs + 5_000)));
        step("pg-boss's stop");
        await queue.boss.stop({ graceful: true, timeout: settings.attemptTimeoutMs + 5_000 });
        agents.destroy();
        step('the database pools');
        await Promise.all(databases.map(({ database }) => database.close()));
        step('nothing: closed');
      })()),
  };
}
