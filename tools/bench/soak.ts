/**
 * Soak (issue 31): several API and worker replicas on one database, several partners writing at
 * once, processes SIGKILLed and restarted on a timer, optionally on a machine made busy by other
 * work. Counts every answer by operation and status, and samples PostgreSQL's lock waits, so a 503
 * (which tells a partner the service is down) can be told from a wait the service caused itself.
 *
 *   npm run bench -- --soak                                  # 5 minutes, 2 APIs, 2 workers, 6 clients, a kill every ~35 s
 *   npm run bench -- --soak --minutes 20 --busy 6            # six CPU-bound processes beside it (load ≈ 8 on 2 cores)
 *   npm run bench -- --soak --kill-every 0                   # no kills
 *
 * PostgreSQL itself is never stopped: every 503 of the run is one too many.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { EVENT_TYPES, PARTNER_BASE_PATH, SCOPES } from '@lop/contract';
import postgres from 'postgres';
import { connectDatabase, createTestDatabase, freePort } from '@lop/db';
import { createClient, createKey, createSubscription, DataProtector, demoId, grantPrograms, seedDemo } from '@lop/domain';
import { startService, type ServiceProcess } from './processes';

export interface SoakOptions {
  serverUrl: string;
  apiEntry: string;
  apiNodeOptions: string;
  minutes: number;
  apis: number;
  workers: number;
  clients: number;
  /** Partner loops per client, each one request at a time. */
  loopsPerClient: number;
  /** Seconds between kills (each ± 30 %); 0 = none. */
  killEverySeconds: number;
  /** CPU-bound processes started beside the service for the run. */
  busy: number;
  say: (line: string) => void;
}

/** A lock wait seen in pg_stat_activity: the statement that waited, how often, and its longest wait. */
export interface LockWait {
  statement: string;
  waitEvent: string;
  seen: number;
  longestMs: number;
}

export interface SoakResults {
  settings: Omit<SoakOptions, 'say' | 'serverUrl'>;
  seconds: number;
  kills: { api: number; worker: number };
  /** operation → status → count; status 0 = no answer (a killed replica, a reset connection). */
  answers: Record<string, Record<string, number>>;
  unavailable: { count: number; firstAtSeconds: number | null; messages: Record<string, number> };
  /** 429 answers by `details[0].issue` and message: which limit refused them. */
  refused: Record<string, number>;
  lockWaits: LockWait[];
  webhooks: { received: number };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits in this database longer than one sample, grouped by the statement that waited. */
function sampleLockWaits(url: string, intervalMs = 50) {
  const sql = postgres(url, { max: 1, onnotice: () => undefined, connection: { application_name: 'soak-lock-sampler' } });
  const open = new Map<string, { since: number; last: number }>();
  const waits = new Map<string, LockWait>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const now = Date.now();
      const rows = await sql<{ pid: number; query: string; wait_event: string; started: Date }[]>`
        select pid, regexp_replace(left(query, 90), '[[:space:]]+', ' ', 'g') as query, wait_event_type || '/' || wait_event as wait_event, query_start as started
        from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`.catch(() => []);
      const seen = new Set<string>();
      for (const row of rows) {
        const key = `${row.pid}|${row.started.getTime()}|${row.query}|${row.wait_event}`;
        seen.add(key);
        const span = open.get(key);
        if (span) span.last = now;
        else open.set(key, { since: now, last: now });
      }
      for (const [key, span] of open) {
        if (seen.has(key) && running) continue;
        open.delete(key);
        const [, , statement, waitEvent] = key.split('|');
        const group = waits.get(`${statement}|${waitEvent}`) ?? { statement, waitEvent, seen: 0, longestMs: 0 };
        group.seen += 1;
        group.longestMs = Math.max(group.longestMs, span.last - span.since + intervalMs);
        waits.set(`${statement}|${waitEvent}`, group);
      }
      await sleep(Math.max(0, intervalMs - (Date.now() - now)));
    }
  })();
  return {
    stop: async (): Promise<LockWait[]> => {
      running = false;
      await loop;
      await sql.end({ timeout: 5 });
      return [...waits.values()].sort((a, b) => b.longestMs - a.longestMs);
    },
  };
}

/** A process that only burns CPU: the "busy machine" of a soak. */
function startBusyProcess(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' });
}

export async function runSoak(options: SoakOptions): Promise<SoakResults> {
  const { say } = options;
  const database = await createTestDatabase(options.serverUrl, 'soak');
  const connection = connectDatabase(database.url, { max: 2, applicationName: 'bench-soak' });
  const busy: ChildProcess[] = [];
  const apis: (ServiceProcess | null)[] = [];
  const workers: (ServiceProcess | null)[] = [];
  let received = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.end('ok');
    });
  });
  receiver.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  try {
    // The server writes every wait longer than this to its log too, for an operator to compare.
    await connection.sql.unsafe(`alter database "${new URL(database.url).pathname.slice(1)}" set log_lock_waits = on`);
    const encryptionKey = randomBytes(32).toString('base64');
    const protector = new DataProtector(Buffer.from(encryptionKey, 'base64'));
    const demo = await seedDemo(connection.db);
    const programId = demoId('program:wellness-sbx');
    const itemId = demoId('item:wellness-sbx:CBC');
    const keys: string[] = [];
    for (let i = 0; i < options.clients; i++) {
      const client = await createClient(connection.db, demo.laboratory_id, `Soak partner ${i + 1}`);
      await grantPrograms(connection.db, { clientId: client.client_id, environment: 'sandbox', programId });
      keys.push((await createKey(connection.db, { clientId: client.client_id, environment: 'sandbox', scopes: [...SCOPES] })).key);
      await createSubscription(connection.db, protector, { clientId: client.client_id, environment: 'sandbox', url: `${receiverUrl}/c${i}`, eventTypes: [...EVENT_TYPES] }, { allowLoopback: true, servicePorts: [] });
    }
    const env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: 'warn',
      PARTNER_ENCRYPTION_KEY: encryptionKey,
      PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
      PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
      PARTNER_METRICS_PORT: '0',
    };
    const apiPorts = await Promise.all(Array.from({ length: options.apis }, () => freePort()));
    const workerPorts = await Promise.all(Array.from({ length: options.workers }, () => freePort()));
    const startApi = (i: number) => startService(options.apiEntry, { ...env, NODE_OPTIONS: options.apiNodeOptions }, { port: apiPorts[i], readyPath: '/readyz' });
    const startWorker = (i: number) =>
      startService('apps/delivery-worker/src/main.ts', { ...env, PARTNER_WORKER_METRICS_PORT: String(workerPorts[i]) }, { port: workerPorts[i], readyPath: '/metrics' });
    for (let i = 0; i < options.apis; i++) apis.push(await startApi(i));
    for (let i = 0; i < options.workers; i++) workers.push(await startWorker(i));
    for (let i = 0; i < options.busy; i++) busy.push(startBusyProcess());
    say(`soak: ${options.apis} APIs, ${options.workers} workers, ${options.clients} clients × ${options.loopsPerClient} loops, ${options.busy} busy processes, ${options.minutes} min`);

    const answers: SoakResults['answers'] = {};
    const unavailable: SoakResults['unavailable'] = { count: 0, firstAtSeconds: null, messages: {} };
    const refused: SoakResults['refused'] = {};
    const startedAt = Date.now();
    const endAt = startedAt + options.minutes * 60_000;
    const note = (operation: string, status: number, body: string) => {
      const byStatus = (answers[operation] ??= {});
      byStatus[status] = (byStatus[status] ?? 0) + 1;
      if (status === 503) {
        unavailable.count++;
        unavailable.firstAtSeconds ??= Math.round((Date.now() - startedAt) / 1000);
        const message = /"message":"([^"]*)"/.exec(body)?.[1] ?? body.slice(0, 80);
        unavailable.messages[message] = (unavailable.messages[message] ?? 0) + 1;
      }
      if (status === 429) {
        const issue = `${/"issue":"([^"]*)"/.exec(body)?.[1] ?? 'no issue'} ("${/"message":"([^"]*)"/.exec(body)?.[1] ?? ''}")`;
        refused[issue] = (refused[issue] ?? 0) + 1;
      }
    };
    let turn = 0;
    const call = async (operation: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const live = apis.filter((api): api is ServiceProcess => api !== null);
      const api = live[turn++ % Math.max(1, live.length)];
      if (!api) {
        note(operation, 0, '');
        await sleep(100);
        return null;
      }
      try {
        const response = await fetch(`${api.url}${PARTNER_BASE_PATH}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
          body: body ? JSON.stringify(body) : undefined,
          signal: AbortSignal.timeout(15_000),
        });
        const text = await response.text();
        note(operation, response.status, text);
        return response.status < 300 ? (JSON.parse(text) as { data: Record<string, unknown> }).data : null;
      } catch {
        note(operation, 0, '');
        await sleep(100);
        return null;
      }
    };

    const lockWaits = sampleLockWaits(database.url);
    const kills = { api: 0, worker: 0 };
    const killing = (async () => {
      if (options.killEverySeconds <= 0) return;
      for (let n = 0; Date.now() < endAt; n++) {
        await sleep(options.killEverySeconds * 1000 * (0.7 + Math.random() * 0.6));
        if (Date.now() >= endAt) break;
        const pool = n % 2 === 0 ? apis : workers;
        const i = Math.floor(Math.random() * pool.length);
        const victim = pool[i];
        if (!victim) continue;
        pool[i] = null;
        victim.child.kill('SIGKILL');
        await new Promise((resolve) => (victim.child.exitCode !== null ? resolve(null) : victim.child.once('exit', resolve)));
        if (pool === apis) kills.api++;
        else kills.worker++;
        say(`  ${Math.round((Date.now() - startedAt) / 1000)} s: SIGKILL ${pool === apis ? 'API' : 'worker'} ${i + 1}`);
        pool[i] = await (pool === apis ? startApi(i) : startWorker(i));
      }
    })();

    const runId = randomBytes(3).toString('hex');
    const partner = async (key: string, client: number, loop: number) => {
      const subject = `soak-${client}`;
      await call('put subject', key, 'PUT', `/v1/subjects/${subject}`);
      let cursor: string | undefined;
      for (let n = 0; Date.now() < endAt; n++) {
        const id = `soak-${runId}-${client}-${loop}-${n}`;
        const created = await call('create order', key, 'POST', '/v1/orders', { external_order_id: id, program_id: programId, item_id: itemId, external_subject_id: subject, collection: 'in_person_draw', region: 'US-CA' }, { 'idempotency-key': id });
        const orderId = created?.order_id as string | undefined;
        if (orderId) {
          await call('get order', key, 'GET', `/v1/orders/${orderId}`);
          if (n % 3 === 0) await call('cancel order', key, 'POST', `/v1/orders/${orderId}/cancel`, {});
          else if (n % 3 === 1) await call('simulate', key, 'POST', `/v1/sandbox/orders/${orderId}/simulate`, { scenario: 'happy_path' });
        }
        if (loop === 0) {
          const page = await call('events page', key, 'GET', `/v1/events?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          if (page?.next_cursor) cursor = page.next_cursor as string;
        }
      }
    };
    await Promise.all(keys.flatMap((key, client) => Array.from({ length: options.loopsPerClient }, (_, loop) => partner(key, client, loop))));
    await killing;
    const seconds = Math.round((Date.now() - startedAt) / 1000);
    const { say: _say, serverUrl: _serverUrl, ...settings } = options;
    return { settings, seconds, kills, answers, unavailable, refused, lockWaits: await lockWaits.stop(), webhooks: { received } };
  } finally {
    for (const child of busy) child.kill('SIGKILL');
    for (const service of [...apis, ...workers]) await service?.stop().catch(() => undefined);
    receiver.closeAllConnections();
    receiver.close();
    await connection.close();
    await database.drop();
  }
}

export function soakMarkdown(date: string, r: SoakResults): string {
  const total = (byStatus: Record<string, number>) => Object.values(byStatus).reduce((a, b) => a + b, 0);
  const lines = [
    `## Soak ${date}`,
    '',
    `${r.settings.apis} APIs, ${r.settings.workers} workers, ${r.settings.clients} clients × ${r.settings.loopsPerClient} loops, ${r.settings.busy} CPU-bound processes beside them, ${r.seconds} s; ` +
      `${r.kills.api} API and ${r.kills.worker} worker SIGKILLs (PostgreSQL never stopped). Webhooks received: ${r.webhooks.received.toLocaleString('en-US')}.`,
    '',
    '| operation | answers | by status |',
    '|---|---|---|',
    ...Object.entries(r.answers).map(([operation, byStatus]) => `| ${operation} | ${total(byStatus).toLocaleString('en-US')} | ${Object.entries(byStatus).map(([s, n]) => `${s === '0' ? 'no answer' : s}: ${n}`).join(', ')} |`),
    '',
    `503 answers: ${r.unavailable.count}${r.unavailable.count > 0 ? ` (first after ${r.unavailable.firstAtSeconds} s): ${Object.entries(r.unavailable.messages).map(([m, n]) => `${n} × "${m}"`).join('; ')}` : ''}.`,
    `429 answers: ${Object.entries(r.refused).map(([issue, n]) => `${n} × ${issue}`).join('; ') || 'none'}.`,
    '',
    'Lock waits seen in pg_stat_activity (sampled every 50 ms), longest first:',
    '',
    '| statement | wait | times seen | longest |',
    '|---|---|---|---|',
    ...r.lockWaits.slice(0, 10).map((w) => `| \`${w.statement.replaceAll('|', '\\|')}\` | ${w.waitEvent} | ${w.seen} | ${w.longestMs} ms |`),
    '',
  ];
  return lines.join('\n');
}
