/**
 * A rolling upgrade under traffic, as an operator runs one (docs/operations.md § Upgrading): the
 * previous release serves creates, reads, cancels, simulations and webhook deliveries (one
 * endpoint failing into dead letters) on a database with a delivery history; a replica of this
 * release starts beside it before the schema moves; this release migrates; its worker and a
 * second API start; the previous release's replicas are taken out of rotation and stopped. It
 * returns what an operator would measure; tools/upgrade/rolling-upgrade.test.ts holds it to the
 * issue's bar, `npm run bench:upgrade` prints it for a larger history.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { connectDatabase, createTestDatabase, freePort, type TestDatabase } from '@lop/db';
import { PROJECT_ROOT } from '@lop/domain';
import { newPartner, startReceiver, subscribe, TEST_ENCRYPTION_KEY, type Partner, type Receiver } from '@lop/testing';
import { sampleLocks, type LockSpan } from './lock-sampler';
import { preparePreviousRelease } from './previous-release';

export interface UpgradeOptions {
  /** The PostgreSQL server to make the upgrade's database on. */
  serverUrl: string;
  /**
   * Finished webhook deliveries (and one attempt each), and as many sandbox request log rows,
   * already in the database: the history migrations must not lock for.
   */
  deliveryRows: number;
  /** Partners, each with its own request loop and a good and a failing webhook endpoint. */
  clients?: number;
  log?: (line: string) => void;
}

export interface RequestRecord {
  /** ms since the upgrade began, and the phase it was in. */
  at: number;
  phase: string;
  replica: string;
  route: string;
  status: number;
  /** The error envelope's code of a 4xx/5xx; for a request that got no HTTP answer, the error's code or message. */
  error?: string;
  /** A 5xx's request id, and what the replica logged under it (the cause the envelope does not show). */
  requestId?: string;
  logged?: string[];
  /** A 503 `unavailable` with Retry-After, sent again as a partner does (the next record of the route). */
  sentAgain?: boolean;
}

export interface UpgradeFigures {
  deliveryRows: number;
  previousRelease: string;
  requests: number;
  byStatus: Record<string, number>;
  /** 5xx answers and requests without an answer; none is expected. */
  /** Final answers that were 5xx, or no answer at all. */
  failures: RequestRecord[];
  /** 503s answered `unavailable` with Retry-After and sent again, each with what its replica logged. */
  busy: RequestRecord[];
  deadlocks: number;
  longestBlockingLock: LockSpan | undefined;
  longestHeldLock: LockSpan | undefined;
  longestLockWait: LockSpan | undefined;
  lockSamples: number;
  migrate: { ms: number; exitCode: number | null; output: string };
  ordersCreated: number;
  ordersMissing: string[];
  streamDense: boolean;
  events: number;
  eventsNotDelivered: number;
  deadLetters: number;
  deliveriesStillPending: number;
  /** The tables that are partitioned once the migration ran (issue 32), and their partitions' count. */
  partitioned: Record<string, number>;
  /** Rows of the history still readable after the migration (deliveries, attempts, request log). */
  historyAfter: { deliveries: number; attempts: number; requestLog: number };
  /** Exit code of each stopped process after its SIGTERM (0 = drained and stopped). */
  exits: Record<string, number | null>;
  /** Lines of any process's output that tell of a lost connection or a deadlock. */
  processProblems: string[];
  phases: Record<string, number>;
}

/** The lines any process logged under a request id (its warning or error carries the cause). */
function loggedUnder(processes: readonly Process[], requestId: string): string[] {
  return processes.flatMap((p) => p.output().split('\n').filter((line) => line.includes(requestId)).map((line) => `${p.name}: ${line.slice(0, 1_000)}`));
}

const PROBLEM = /deadlock detected|40P01|terminating connection|57P01|Connection terminated|ECONNREFUSED|ECONNRESET|CONNECTION_CLOSED|CONNECTION_ENDED/;

interface Process {
  name: string;
  child: ChildProcess;
  url?: string;
  output: () => string;
  exited: Promise<number | null>;
  inFlight: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function rollingUpgrade(options: UpgradeOptions): Promise<UpgradeFigures> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const phases: Record<string, number> = {};
  let currentPhase = '';
  const phase = (name: string) => {
    currentPhase = name;
    phases[name] = Date.now() - started;
    log(`${((Date.now() - started) / 1000).toFixed(1)} s  ${name}`);
  };
  const previous = preparePreviousRelease();
  const database: TestDatabase = await createTestDatabase(options.serverUrl, 'upgrade', { migrated: false });
  const dataDir = mkdtempSync(join(tmpdir(), 'lop-upgrade-'));
  chmodSync(dataDir, 0o755);
  const processes: Process[] = [];
  const receiver: Receiver = await startReceiver((request) => ({ status: request.path.startsWith('/failing') ? 500 : 200 }));
  const connection = connectDatabase(database.url, { max: 4, applicationName: 'upgrade-observer' });
  let sampler: ReturnType<typeof sampleLocks> | undefined;

  const env = (extra: Record<string, string>) => ({
    ...process.env,
    DATABASE_URL: database.url,
    PARTNER_DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    PARTNER_METRICS_PORT: '0',
    PARTNER_DB_POOL_SIZE: '6',
    PARTNER_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
    PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
    PARTNER_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '2',
    PARTNER_WEBHOOK_RETRY_DELAYS_SECONDS: '0.2,0.2,0.2,0.2,0.2,0.2',
    PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS: '0.5',
    ...extra,
  });

  /** A process of the release checked out at `root` (this checkout: PROJECT_ROOT), from its own bundles. */
  const spawnFrom = (root: string, name: string, entry: string[], extra: Record<string, string>): Process => {
    const child = spawn(process.execPath, [join(root, 'tools/build/run-bundled.mjs'), ...entry], { cwd: root, env: env(extra), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-200_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const started: Process = { name, child, output: () => output, exited, inFlight: 0 };
    processes.push(started);
    return started;
  };

  const startApi = async (root: string, name: string): Promise<Process> => {
    const port = await freePort();
    const api = spawnFrom(root, name, ['apps/partner-api/src/main.ts'], { PORT: String(port) });
    api.url = `http://127.0.0.1:${port}`;
    for (const deadline = Date.now() + 90_000; ; await sleep(100)) {
      if (api.child.exitCode !== null) throw new Error(`${name} exited early: ${api.output()}`);
      if (Date.now() > deadline) throw new Error(`${name} was not ready in time: ${api.output()}`);
      if (await fetch(`${api.url}/readyz`).then((r) => r.status === 200, () => false)) return api;
    }
  };

  const startWorker = async (root: string, name: string): Promise<Process> => {
    const port = await freePort();
    const worker = spawnFrom(root, name, ['apps/delivery-worker/src/main.ts'], { PARTNER_WORKER_METRICS_PORT: String(port) });
    for (const deadline = Date.now() + 90_000; ; await sleep(100)) {
      if (worker.child.exitCode !== null) throw new Error(`${name} exited early: ${worker.output()}`);
      if (Date.now() > deadline) throw new Error(`${name} did not start in time: ${worker.output()}`);
      if (await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.ok, () => false)) return worker;
    }
  };

  // The load balancer: partners' requests go to the replicas in rotation, round robin.
  const rotation: Process[] = [];
  const records: RequestRecord[] = [];
  let turn = 0;
  const send = async (method: string, path: string, route: string, partner: Partner, json: unknown, headers: Record<string, string>) => {
    const replica = rotation[turn++ % rotation.length];
    replica.inFlight += 1;
    const at = Date.now() - started;
    const inPhase = currentPhase;
    try {
      const response = await fetch(`${replica.url}${PARTNER_BASE_PATH}${path}`, {
        method,
        headers: { authorization: `Bearer ${partner.key}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
      const text = await response.text();
      const body = text ? (JSON.parse(text) as any) : undefined;
      const record: RequestRecord = {
        at,
        phase: inPhase,
        replica: replica.name,
        route,
        status: response.status,
        ...(response.status >= 400 ? { error: String(body?.error?.code) } : {}),
        ...(response.status >= 500 ? { requestId: String(body?.request_id) } : {}),
      };
      records.push(record);
      return { status: response.status, body, retryAfter: response.headers.get('retry-after'), record };
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const record: RequestRecord = { at, phase: inPhase, replica: replica.name, route, status: 0, error: cause?.code ?? cause?.message ?? String(error) };
      records.push(record);
      return { status: 0, body: undefined, retryAfter: null, record };
    } finally {
      replica.inFlight -= 1;
    }
  };
  // As a partner does: a 503 `unavailable` with Retry-After (a lock another transaction held past
  // lock_timeout, as a starved machine makes happen) is sent once more.
  // Which 503s there were, and why, is checked from the replicas' logs (`busy` in the figures).
  const call = async (method: string, path: string, route: string, partner: Partner, json?: unknown, headers: Record<string, string> = {}) => {
    const first = await send(method, path, route, partner, json, headers);
    if (first.status !== 503 || first.body?.error?.code !== 'unavailable' || first.retryAfter === null) return first;
    first.record.sentAgain = true;
    await sleep(Math.min(Number(first.retryAfter) * 1_000, 1_000));
    return send(method, path, route, partner, json, headers);
  };

  /** Out of rotation, its requests answered, then SIGTERM: the orchestrator's order. */
  const retire = async (replica: Process) => {
    const index = rotation.indexOf(replica);
    if (index >= 0) rotation.splice(index, 1);
    for (const deadline = Date.now() + 10_000; replica.inFlight > 0 && Date.now() < deadline; ) await sleep(10);
    replica.child.kill('SIGTERM');
    return replica.exited;
  };

  try {
    phase('previous release: migrates the empty database (its npm run migrate), then two APIs and a worker start');
    const previousMigrate = spawnFrom(previous.root, 'previous-migrate', ['--inline', 'tools/admin/main.ts', 'migrate'], {});
    if ((await previousMigrate.exited) !== 0) throw new Error(`the previous release's migrate failed: ${previousMigrate.output()}`);
    processes.splice(processes.indexOf(previousMigrate), 1);
    const oldApis = [await startApi(previous.root, 'previous-api-1')];
    oldApis.push(await startApi(previous.root, 'previous-api-2'));
    const oldWorker = await startWorker(previous.root, 'previous-worker');
    rotation.push(...oldApis);

    phase(`tenants, subscriptions and ${options.deliveryRows} rows of delivery history`);
    // One client per loop: one client's writes queue on its stream (issue 31), which is not what this measures.
    const partners: Partner[] = [];
    for (let i = 0; i < (options.clients ?? 4); i++) {
      const partner = await newPartner(connection.db, connection.sql);
      await subscribe(connection.db, partner, receiver.url(`/good/${i}`));
      await subscribe(connection.db, partner, receiver.url(`/failing/${i}`));
      partners.push(partner);
    }
    await writeDeliveryHistory(connection.sql, await newPartner(connection.db, connection.sql), options.deliveryRows);
    await writeRequestLogHistory(connection.sql, options.deliveryRows);
    const [{ deadlocks: deadlocksBefore }] = await connection.sql<{ deadlocks: number }[]>`select deadlocks::int from pg_stat_database where datname = current_database()`;

    phase('traffic starts on the previous release');
    sampler = sampleLocks(database.url);
    const created = new Map<string, Partner>();
    let trafficOn = true;
    const loop = async (partner: Partner, id: number) => {
      for (let i = 0; trafficOn; i++) {
        const body = { external_order_id: `upgrade-${id}-${i}-${randomBytes(3).toString('hex')}`, program_id: partner.programId, item_id: partner.itemId, external_subject_id: partner.subject, collection: 'in_person_draw' };
        const order = await call('POST', '/v1/orders', 'POST /v1/orders', partner, body, { 'idempotency-key': `upgrade-${id}-${i}-${randomBytes(4).toString('hex')}` });
        if (order.status !== 201) continue;
        const orderId = order.body.data.order_id as string;
        created.set(orderId, partner);
        await call('GET', `/v1/orders/${orderId}`, 'GET /v1/orders/{id}', partner);
        if (i % 4 === 1) await call('POST', `/v1/orders/${orderId}/cancel`, 'POST /v1/orders/{id}/cancel', partner, {});
        else if (i % 4 === 2) await call('POST', `/v1/sandbox/orders/${orderId}/simulate`, 'POST /v1/sandbox/orders/{id}/simulate', partner, { scenario: 'happy_path' });
        else if (i % 4 === 3) await call('GET', '/v1/events?limit=100', 'GET /v1/events', partner);
      }
    };
    const traffic = Promise.all(partners.map(loop));
    await sleep(3_000);

    phase('this release: an API replica starts on the previous schema and joins the rotation');
    const newApi1 = await startApi(PROJECT_ROOT, 'new-api-1');
    rotation.push(newApi1);
    await sleep(2_000);

    phase('this release migrates (npm run migrate)');
    const migrateStarted = Date.now();
    const migrate = spawnFrom(PROJECT_ROOT, 'migrate', ['--inline', 'tools/admin/main.ts', 'migrate'], {});
    const migrateExit = await migrate.exited;
    const migrateMs = Date.now() - migrateStarted;
    processes.splice(processes.indexOf(migrate), 1);
    phase(`migrated in ${migrateMs} ms (exit ${migrateExit})`);
    const partitioned = Object.fromEntries(
      (
        await connection.sql<{ name: string; partitions: number }[]>`
          select c.relname as name, (select count(*) from pg_inherits i where i.inhparent = c.oid)::int as partitions
          from pg_class c where c.relkind = 'p' and c.relnamespace = 'public'::regnamespace order by 1`
      ).map((row) => [row.name, row.partitions]),
    );
    const [historyAfter] = await connection.sql<{ deliveries: number; attempts: number; requestLog: number }[]>`
      select (select count(*) from webhook_deliveries where kind = 'test')::int as deliveries,
             (select count(*) from webhook_delivery_attempts a where a.request_body = '{"type":"webhook.test"}')::int as attempts,
             (select count(*) from sandbox_request_log where request_id like 'history-%')::int as "requestLog"`;

    const newWorker = await startWorker(PROJECT_ROOT, 'new-worker');
    const newApi2 = await startApi(PROJECT_ROOT, 'new-api-2');
    rotation.push(newApi2);
    phase('this release: worker and second API serving beside the previous release');
    await sleep(3_000);

    phase('previous release: out of rotation and stopped');
    const exits: Record<string, number | null> = {};
    for (const api of oldApis) exits[api.name] = await retire(api);
    oldWorker.child.kill('SIGTERM');
    exits[oldWorker.name] = await oldWorker.exited;
    await sleep(3_000);
    trafficOn = false;
    await traffic;
    phase('traffic stopped; waiting for every delivery to end');
    const { longestBlocking, longestHeld, longestWait, samples } = await stopSampler(sampler);
    sampler = undefined;

    // Every event of each partner's stream, read page by page through this release.
    const streams: { partner: Partner; events: { event_id: string; sequence: number }[] }[] = [];
    for (const partner of partners) {
      const events: { event_id: string; sequence: number }[] = [];
      for (let cursor = '', more = true; more; ) {
        const page = await call('GET', `/v1/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`, 'GET /v1/events (check)', partner);
        if (page.status !== 200) break;
        events.push(...page.body.data.events);
        cursor = page.body.data.next_cursor;
        more = page.body.data.has_more;
      }
      streams.push({ partner, events });
    }
    const events = streams.flatMap((stream) => stream.events);
    const goodReceived = () => new Set(receiver.requests.filter((r) => r.path.startsWith('/good')).map((r) => String(r.headers['x-partner-event-id'])));
    const clientIds = partners.map((partner) => partner.clientId);
    for (const deadline = Date.now() + 90_000; Date.now() < deadline; await sleep(250)) {
      const received = goodReceived();
      const [{ pending }] = await connection.sql<{ pending: number }[]>`select count(*)::int as pending from webhook_deliveries where state = 'pending'`;
      if (pending === 0 && events.every((event) => received.has(event.event_id))) break;
    }
    const received = goodReceived();
    const [{ pending, dead }] = await connection.sql<{ pending: number; dead: number }[]>`
      select count(*) filter (where d.state = 'pending')::int as pending, count(*) filter (where d.state = 'dead_lettered' and d.event_id is not null)::int as dead
      from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id where s.client_id = any(${clientIds}::uuid[])`;

    const ordersMissing: string[] = [];
    for (const [orderId, partner] of created) {
      const found = await call('GET', `/v1/orders/${orderId}`, 'GET /v1/orders/{id} (check)', partner);
      if (found.status !== 200) ordersMissing.push(orderId);
    }
    await sleep(1_500); // statistics reach pg_stat_database within a second
    const [{ deadlocks: deadlocksAfter }] = await connection.sql<{ deadlocks: number }[]>`select deadlocks::int from pg_stat_database where datname = current_database()`;

    for (const process of [newApi1, newApi2, newWorker]) exits[process.name] = await retire(process);
    phase('this release stopped');

    const withLog = (record: RequestRecord): RequestRecord => ({ ...record, ...(record.requestId ? { logged: loggedUnder(processes, record.requestId) } : {}) });
    const byStatus: Record<string, number> = {};
    for (const record of records) byStatus[record.status || 'no answer'] = (byStatus[record.status || 'no answer'] ?? 0) + 1;
    return {
      deliveryRows: options.deliveryRows,
      previousRelease: previous.commit,
      requests: records.length,
      byStatus,
      failures: records.filter((record) => !record.sentAgain && (record.status === 0 || record.status >= 500)).map(withLog),
      busy: records.filter((record) => record.sentAgain).map(withLog),
      deadlocks: deadlocksAfter - deadlocksBefore,
      longestBlockingLock: longestBlocking,
      longestHeldLock: longestHeld,
      longestLockWait: longestWait,
      lockSamples: samples,
      migrate: { ms: migrateMs, exitCode: migrateExit, output: migrate.output() },
      ordersCreated: created.size,
      ordersMissing,
      streamDense: streams.every((stream) => stream.events.every((event, i) => event.sequence === i + 1)),
      events: events.length,
      eventsNotDelivered: events.filter((event) => !received.has(event.event_id)).length,
      deadLetters: dead,
      deliveriesStillPending: pending,
      partitioned,
      historyAfter,
      exits,
      processProblems: processes.flatMap((p) => p.output().split('\n').filter((line) => PROBLEM.test(line)).map((line) => `${p.name}: ${line.slice(0, 300)}`)),
      phases,
    };
  } finally {
    if (sampler) await stopSampler(sampler).catch(() => undefined);
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    await receiver.close();
    await connection.close();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function stopSampler(sampler: ReturnType<typeof sampleLocks>) {
  await sampler.stop();
  return { longestBlocking: sampler.longestBlocking, longestHeld: sampler.longestHeld, longestWait: sampler.longestWait, samples: sampler.samples };
}

/**
 * Finished deliveries of a second partner, as months of traffic leave them: delivered and dead
 * lettered test deliveries with one recorded attempt each, spread over the retention window.
 */
async function writeDeliveryHistory(sql: ReturnType<typeof connectDatabase>['sql'], partner: Partner, rows: number): Promise<void> {
  const [subscription] = await sql<{ id: string; laboratory_id: string }[]>`
    insert into webhook_subscriptions (laboratory_id, client_id, environment, url, event_types, secret_protected)
    select laboratory_id, id, 'sandbox', 'https://partner.example/hooks', '{order.created}', 'x' from api_clients where id = ${partner.clientId}
    returning id, laboratory_id`;
  for (let from = 0; from < rows; from += 25_000) {
    const count = Math.min(25_000, rows - from);
    await sql`
      with made as (
        insert into webhook_deliveries (subscription_id, kind, state, attempts_made, last_status_code, created_at, completed_at)
        select ${subscription.id}, 'test', (case when g % 10 = 0 then 'dead_lettered' else 'delivered' end)::webhook_delivery_state, 1,
               case when g % 10 = 0 then 500 else 200 end, now() - (g % 2500) * interval '15 minutes', now() - (g % 2500) * interval '15 minutes' + interval '1 second'
        from generate_series(1, ${count}) g
        returning id, state, created_at)
      insert into webhook_delivery_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, outcome, request_body, response_body)
      select id, 1, created_at, 120, case when state = 'delivered' then 200 else 500 end,
             (case when state = 'delivered' then 'delivered' else 'dead_lettered' end)::webhook_attempt_outcome,
             '{"type":"webhook.test"}', convert_to('{"ok":true}', 'UTF8')
      from made`;
  }
}

/** A week of sandbox request log rows (the log keeps 7 days), as a busy sandbox leaves them. */
async function writeRequestLogHistory(sql: ReturnType<typeof connectDatabase>['sql'], rows: number): Promise<void> {
  for (let from = 0; from < rows; from += 25_000) {
    const count = Math.min(25_000, rows - from);
    await sql`
      insert into sandbox_request_log (laboratory_id, client_id, environment, request_id, occurred_at, method, route, status, duration_ms, key_prefix, door, request_body, response_body)
      select gen_random_uuid(), gen_random_uuid(), 'sandbox', 'history-' || (${from} + g), now() - ((${from} + g) % 10000) * interval '1 minute',
             'GET', '/v1/orders/{id}', 200, 12, 'lop_test_hist', 'rest', null, '{"data":{"order_id":"x"}}'::jsonb
      from generate_series(1, ${count}) g`;
  }
}

/** The figures an operator (and the issue) asks for, as lines to print. */
export function upgradeSummary(figures: UpgradeFigures): string {
  const lock = (span: LockSpan | undefined) => (span ? `${span.ms} ms (${span.mode} on ${span.relation}, by ${span.holder || 'an unnamed backend'})` : 'none seen');
  return [
    `rolling upgrade from ${figures.previousRelease.slice(0, 7)} with ${figures.deliveryRows.toLocaleString('en-US')} delivery rows`,
    `  requests            ${figures.requests} (${Object.entries(figures.byStatus).map(([status, n]) => `${status}: ${n}`).join(', ')})`,
    `  5xx / no answer     ${figures.failures.length}`,
    `  503, sent again     ${figures.busy.length}`,
    `  deadlocks           ${figures.deadlocks}`,
    `  longest blocking    ${lock(figures.longestBlockingLock)}`,
    `  longest held, any   ${lock(figures.longestHeldLock)}`,
    `  longest lock wait   ${lock(figures.longestLockWait)}`,
    `  migrate             ${figures.migrate.ms} ms, exit ${figures.migrate.exitCode}`,
    `  orders              ${figures.ordersCreated} created, ${figures.ordersMissing.length} missing`,
    `  partitioned         ${Object.entries(figures.partitioned).map(([table, n]) => `${table} (${n})`).join(', ') || 'none'}`,
    `  events              ${figures.events} (dense: ${figures.streamDense}), ${figures.eventsNotDelivered} not delivered, ${figures.deadLetters} dead letters, ${figures.deliveriesStillPending} pending`,
    ...figures.failures.map((f) => `  failed: ${(f.at / 1000).toFixed(1)} s ${f.route} on ${f.replica}: ${f.status || 'no answer'} ${f.error ?? ''} (${f.phase})`),
    ...figures.processProblems.map((line) => `  problem: ${line}`),
  ].join('\n');
}
