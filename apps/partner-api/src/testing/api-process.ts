import { randomBytes } from 'node:crypto';
import { spawnApiProcess, type SpawnedApi } from '@lop/testing';
import { testApi, type RequestOptions, type TestResponse } from './harness';

export { killAllApiProcesses } from '@lop/testing';

/** One encryption key for every process a test starts, so they can read each other's sealed data. */
export const PROCESS_ENCRYPTION_KEY = randomBytes(32).toString('base64');

export interface ApiProcess extends SpawnedApi {
  /** A partner call below the base path, e.g. `/v1/orders`. */
  call(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
}

/**
 * The partner API as its own process (spawnApiProcess) on a free port, with this file's shared
 * encryption key, a pool of 6 and the create limit lifted; `env` overrides any of them.
 */
export async function startApiProcess(databaseUrl: string, env: Record<string, string> = {}): Promise<ApiProcess> {
  const spawned = await spawnApiProcess(databaseUrl, {
    env: { PARTNER_DB_POOL_SIZE: '6', PARTNER_ENCRYPTION_KEY: PROCESS_ENCRYPTION_KEY, PARTNER_CREATE_ORDER_RATE_LIMIT: '100000', ...env },
  });
  const { call } = testApi(spawned.url, () => spawned.kill());
  return { ...spawned, call };
}
