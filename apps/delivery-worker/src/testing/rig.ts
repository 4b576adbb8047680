import { afterAll, beforeAll } from 'vitest';
import { connectDatabase } from '@lop/db';
import { attachDeliveryQueue } from '@lop/domain';
import { type Receiver, type Responder, startReceiver, testDatabaseUrl, workerConfig } from '@lop/testing';
import { type DeliveryWorkerOptions, type RunningDeliveryWorker, startDeliveryWorker } from '../worker';

export interface DeliveryRig {
  database: ReturnType<typeof connectDatabase>;
  /** Started before the file's tests, closed after them. */
  worker: RunningDeliveryWorker;
  receiver: Receiver;
  /** Takes the worker's queue away from this process (appends then cannot schedule deliveries), until attachQueue. */
  detachQueue(): void;
  attachQueue(): void;
}

/**
 * What every delivery test file stands on: its own database connection, a receiver answering with
 * `reply`, a real delivery worker whose queue this process enqueues into (the test plays the API),
 * all closed after the file; `beforeClose` tidies first (a trigger, a backlog).
 */
export function useDeliveryRig(
  name: string,
  options: { poolMax?: number; reply?: Responder; worker?: () => DeliveryWorkerOptions; beforeClose?: () => Promise<void> } = {},
): DeliveryRig {
  let detach: (() => void) | undefined;
  const rig: DeliveryRig = {
    database: connectDatabase(testDatabaseUrl(), { max: options.poolMax ?? 4, applicationName: `${name}-test` }),
    worker: undefined as unknown as RunningDeliveryWorker,
    receiver: undefined as unknown as Receiver,
    detachQueue: () => detach?.(),
    attachQueue: () => void (detach = attachDeliveryQueue(rig.worker.queue)),
  };
  beforeAll(async () => {
    rig.receiver = await startReceiver(options.reply);
    rig.worker = await startDeliveryWorker(testDatabaseUrl(), { config: workerConfig(), ...options.worker?.() });
    rig.attachQueue();
  });
  afterAll(async () => {
    await options.beforeClose?.();
    detach?.();
    await rig.worker?.close();
    await rig.receiver?.close();
    await rig.database.close();
  });
  return rig;
}
