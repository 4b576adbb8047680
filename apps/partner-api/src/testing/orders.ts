import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { LifecycleDetail } from '@lop/contract';
import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import { orders, type Database, type DatabaseConnection, type Sql } from '@lop/db';
import {
  authenticate,
  changeOrderState,
  createOrder,
  DataProtector,
  loadConfig,
  lockOrder,
  TRANSITIONS,
  type Caller,
  type Transition,
} from '@lop/domain';
import { createLogger, startPartnerApi } from '../main';
import { testApi, type CapturedLog, type TestApi, type TestResponse } from './harness';
import { type ItemRow, type ProgramRow, testDatabaseUrl, unique } from '@lop/testing';

/** Order tests create many orders per key: the per-key rate limit is not what they check. */
export const NO_RATE_LIMIT = { PARTNER_CREATE_ORDER_RATE_LIMIT: '100000' };

/** A laboratory-supplied report document, as the laboratory's result release carries it. */
export const REPORT_PDF_BASE64 = Buffer.from('%PDF-1.4\n% a laboratory report\n').toString('base64');

export interface CreateOptions {
  /** Defaults to a fresh unique key; `null` sends no Idempotency-Key header. */
  idempotencyKey?: string | null;
  headers?: Record<string, string>;
}

/** The order calls of one API key. */
export function ordersClient(api: TestApi, key: string) {
  return {
    key,
    create(body: unknown, options: CreateOptions = {}): Promise<TestResponse> {
      const idempotencyKey = options.idempotencyKey === undefined ? unique('idem') : options.idempotencyKey;
      const headers: Record<string, string> = { ...options.headers };
      if (idempotencyKey !== null) headers['idempotency-key'] = idempotencyKey;
      return api.call('POST', '/v1/orders', { key, json: body, headers });
    },
    get: (orderId: string) => api.call('GET', `/v1/orders/${orderId}`, { key }),
    cancel: (orderId: string) => api.call('POST', `/v1/orders/${orderId}/cancel`, { key }),
    events: (query = '') => api.call('GET', `/v1/events${query}`, { key }),
    requirements: (programId: string, query = '') => api.call('GET', `/v1/programs/${programId}/requirements${query}`, { key }),
    /** Registers an opaque subject reference (orders need one). */
    async subject(externalSubjectId = unique('subject')): Promise<string> {
      const response = await api.call('PUT', `/v1/subjects/${encodeURIComponent(externalSubjectId)}`, { key });
      expect(response.status, response.text).toBe(200);
      return externalSubjectId;
    },
  };
}
export type OrdersClient = ReturnType<typeof ordersClient>;

/** A minimal valid create request for a program with no requirements profile. */
export function orderBody(program: Pick<ProgramRow, 'id'>, item: Pick<ItemRow, 'id'>, subject: string, overrides: Record<string, unknown> = {}) {
  return { external_order_id: unique('ext'), program_id: program.id, item_id: item.id, external_subject_id: subject, collection: 'in_person_draw', ...overrides };
}

/** The Caller a key resolves to, for calling domain functions directly. */
export const callerOf = (sql: DatabaseConnection['sql'], key: string): Promise<Caller> => authenticate(sql, `Bearer ${key}`);

/** Creates an order through the domain function, in its own transaction (fast, no HTTP). */
export function createOrderDirect(db: Database, protector: DataProtector, caller: Caller, body: Parameters<typeof createOrder>[3]) {
  return db.transaction((tx) => createOrder(tx, protector, caller, body));
}

/** Runs `task(i)` for i in [0, count) with at most `concurrency` running at once. */
/**
 * Holds a client's event-stream counter row, as another writer's commit would: a write of that
 * stream claims its key, inserts its order and then waits at the counter, genuinely in flight,
 * until `release()`.
 */
export async function holdStream(sql: Sql, clientId: string, environment: 'sandbox' | 'production' = 'sandbox') {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: (pid: number) => void;
  const holderPid = new Promise<number>((resolve) => (locked = resolve));
  const holder = sql.begin(async (tx) => {
    const [{ pid }] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
    await tx`select 1 from event_streams where client_id = ${clientId} and environment = ${environment} for update`;
    locked(pid);
    await released;
  });
  const pid = await holderPid;
  return {
    /** Resolves once `count` sessions wait on the held row. */
    blocking: (count = 1) =>
      expect
        .poll(async () => (await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where ${pid}::int = any(pg_blocking_pids(pid))`)[0].n, { timeout: 5_000, interval: 20 })
        .toBe(count),
    release: async () => {
      release();
      await holder;
    },
  };
}

export async function inParallel<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

/** The shortest sequence of transitions from `received` to `target`, found in the one transition table. */
export function pathTo(target: LifecycleDetail): Transition[] {
  const queue: { state: LifecycleDetail; path: Transition[] }[] = [{ state: 'received', path: [] }];
  const seen = new Set<LifecycleDetail>(['received']);
  while (queue.length > 0) {
    const { state, path } = queue.shift()!;
    if (state === target) return path;
    for (const [name, rule] of Object.entries(TRANSITIONS) as [Transition, (typeof TRANSITIONS)[Transition]][]) {
      if (!(rule.from as readonly LifecycleDetail[]).includes(state) || seen.has(rule.to)) continue;
      seen.add(rule.to);
      queue.push({ state: rule.to, path: [...path, name] });
    }
  }
  throw new Error(`no path from received to ${target}`);
}

/** Moves an order to `target` through the domain's transitions (the same ones laboratory operations use). */
export async function driveOrderTo(db: Database, orderId: string, target: LifecycleDetail): Promise<void> {
  for (const transition of pathTo(target)) {
    await db.transaction(async (tx) => {
      const order = await lockOrder(tx, orderId);
      await changeOrderState(tx, order!, transition);
    });
  }
  const [row] = await db.select({ detail: orders.lifecycleDetail }).from(orders).where(eq(orders.id, orderId));
  expect(row.detail).toBe(target);
}

/**
 * The real partner API (startPartnerApi), with its production logger writing to memory at the
 * most verbose level, and a known encryption key so a test can decrypt what was stored.
 */
export async function startObservedApi(env: Record<string, string> = {}): Promise<TestApi & { log: CapturedLog; protector: DataProtector }> {
  const masterKey = randomBytes(32);
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'trace',
    PARTNER_DB_POOL_SIZE: '4',
    PARTNER_ENCRYPTION_KEY: masterKey.toString('base64'),
    ...NO_RATE_LIMIT,
    ...env,
  });
  const raw: string[] = [];
  const memory = new Writable({
    write(chunk, _encoding, done) {
      raw.push(String(chunk));
      done();
    },
  });
  const running = await startPartnerApi({ config, databaseUrl: testDatabaseUrl(), logger: createLogger(config, 'partner-api-observed', memory) });
  return {
    ...testApi(running.url, () => running.close()),
    protector: new DataProtector(masterKey),
    log: {
      get lines() {
        return raw.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line));
      },
      text: () => raw.join(''),
    },
  };
}
