/**
 * `npm run bench`: the partner API against a BASELINE (bare node:http + postgres.js, same SQL), in
 * one run, on a fresh database with realistic data; then webhook delivery latency and drain rate.
 * Writes bench/results/<date>.json and .md and prints the markdown table.
 *
 *   npm run bench                     # full run, about 4-5 minutes
 *   npm run bench -- --quick          # CI-sized: small data, 3 s per measurement
 *   npm run bench -- --seconds 20 --connections 32 --orders 10000 --no-webhooks
 *   npm run bench -- --quick --no-webhooks --api-cpu-profile /tmp/prof   # where does the API's CPU go?
 *   npm run bench -- --scale                                           # 10 k, 100 k and 1 M orders (tools/bench/scale.ts)
 *   npm run bench -- --scale --sizes 10000,100000
 *   npm run bench -- --noisy-neighbour-only                            # one client's load (creates, recovers, held GET /v1/events?wait) against another's latency (tools/bench/noisy-neighbour.ts)
 *   npm run bench -- --upgrade --delivery-rows 250000                  # a rolling upgrade from the previous release under traffic (tools/upgrade)
 *   npm run bench -- --soak --minutes 20 --busy 6                       # replicas SIGKILLed under several partners' writes (tools/bench/soak.ts)
 *   npm run bench -- --audit                                           # GET order throughput with the audit trail on vs off (tools/bench/audit-cost.ts)
 *   npm run bench -- --capacity                                        # the capacity model's figures (tools/bench/capacity.ts, docs/capacity.md)
 *   npm run bench -- --capacity --capacity-orders 1000000               # the same at 10 M events, checked against the last default run
 *
 * Uses DATABASE_URL's server (a fresh database is created on it and dropped afterwards) or the
 * embedded PostgreSQL. Everything runs on 127.0.0.1; every load is bounded in time.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { connectDatabase, createTestDatabase, freePort, locateDatabase } from '@lop/db';
import { loadConfig } from '@lop/domain';
import { pageEvents, runLoad, type LoadResult } from './http-load';
import { loadBenchData } from './load-data';
import { bundle, REPO_ROOT, rssOf, sampleRss, startService, type ServiceProcess } from './processes';
import { checkTargets, markdownReport, type BenchResults } from './report';
import { createOrderRequests, getOrderRequests } from './requests';
import { runScale, scaleMarkdown } from './scale';
import { measureNoisyNeighbour, noisyNeighbourMarkdown, type NoisyNeighbourResults } from './noisy-neighbour';
import { measureWebhooks, type NotMeasured } from './webhooks';
import { rollingUpgrade, upgradeSummary } from '../upgrade/rolling-upgrade';
import { runSoak, soakMarkdown } from './soak';
import { runCapacity } from './capacity';
import { auditCostMarkdown, measureAuditCost } from './audit-cost';
import { capacityMarkdown, capacityResultFiles, readCapacity, storageCheck } from './capacity-report';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    connections: { type: 'string' },
    orders: { type: 'string' },
    events: { type: 'string' },
    'webhook-rate': { type: 'string' },
    'webhook-seconds': { type: 'string' },
    backlog: { type: 'string' },
    'no-webhooks': { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'info' },
    out: { type: 'string', default: join(REPO_ROOT, 'bench/results') },
    'keep-database': { type: 'boolean', default: false },
    // Run the API from its TypeScript sources through tsx instead of the production bundle.
    source: { type: 'boolean', default: false },
    // V8 flags for the API process. Without a heap cap V8 lets the old generation's committed size
    // grow to several times the live heap under load (about 240 MB RSS for a 35 MB live heap here).
    'api-node-options': { type: 'string', default: '--max-old-space-size=128' },
    // Writes a V8 CPU profile of the API process into this folder (open it in Chrome DevTools).
    'api-cpu-profile': { type: 'string' },
    // Scale run (tools/bench/scale.ts): one fresh database per size.
    scale: { type: 'boolean', default: false },
    sizes: { type: 'string', default: '10000,100000,1000000' },
    'other-clients': { type: 'string', default: '19' },
    'page-events': { type: 'string', default: '250000' },
    'scale-rounds': { type: 'string', default: '3' },
    rate: { type: 'string' },
    'create-rate': { type: 'string' },
    'noisy-neighbour-only': { type: 'boolean', default: false },
    // Rolling upgrade (tools/upgrade/rolling-upgrade.ts) on a database with this much delivery history.
    upgrade: { type: 'boolean', default: false },
    'delivery-rows': { type: 'string', default: '250000' },
    'no-noisy-neighbour': { type: 'boolean', default: false },
    // Soak (tools/bench/soak.ts).
    soak: { type: 'boolean', default: false },
    minutes: { type: 'string', default: '5' },
    'kill-every': { type: 'string', default: '35' },
    busy: { type: 'string', default: '0' },
    // Capacity (tools/bench/capacity.ts): the figures of docs/capacity.md's model.
    capacity: { type: 'boolean', default: false },
    'capacity-orders': { type: 'string', default: '100000' },
    'capacity-deliveries': { type: 'string', default: '1000000' },
    'capacity-rates': { type: 'string', default: 'get=100,page=10,poll=50,create=20,simulate=5' },
    // A capacity result to check this run's storage against (default: the newest of another size in --out; `none` for no check).
    'capacity-reference': { type: 'string' },
    // No streaming replica (its base backup copies the whole data folder: about 17 GB at 10 M events).
    'capacity-skip-replica': { type: 'boolean', default: false },
    // Writes a capacity result's .md again from its .json with the model as it is now (after a change to the model).
    'capacity-report': { type: 'string' },
    // Client A's and B's create budget per minute in the noisy-neighbour section (B creates 20 a second).
    'noisy-create-budget': { type: 'string', default: '2400' },
    // Audit trail cost (tools/bench/audit-cost.ts): rounds per mode, alternating on/off.
    audit: { type: 'boolean', default: false },
    'audit-rounds': { type: 'string' },
  },
});
const quick = values.quick!;
const num = (value: string | undefined, full: number, small: number) => (value === undefined ? (quick ? small : full) : Number(value));
const settings = {
  seconds: num(values.seconds, 12, 3),
  connections: num(values.connections, 16, 8),
  orders: num(values.orders, 10_000, 1_000),
  events: num(values.events, 100_000, 10_000),
  webhookRate: num(values['webhook-rate'], 100, 100),
  webhookSeconds: num(values['webhook-seconds'], 10, 3),
  backlog: num(values.backlog, 10_000, 1_000),
  logLevel: values['log-level']!,
  poolSize: 10,
};
const warmupSeconds = Math.max(1, Math.round(settings.seconds / 4));
const say = (line: string) => process.stderr.write(`${line}\n`);

const config = loadConfig();
const loadBefore = loadavg();
say(`bench: ${quick ? 'quick' : 'full'} run; ${cpus().length} cores, load average ${loadBefore.map((n) => n.toFixed(2)).join(' ')}`);
const location = await locateDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.PARTNER_DATA_DIR, embeddedPort: config.PARTNER_EMBEDDED_PG_PORT });

/** The API as production runs it: the bundle `nx build` makes (tools/build/bundle.mjs), on plain node. */
async function apiEntryPoint(): Promise<string> {
  if (values.source) return 'apps/partner-api/src/main.ts';
  const entry = 'tmp/bench/partner-api/main.js';
  await bundle('apps/partner-api/src/main.ts', join(REPO_ROOT, entry));
  return entry;
}

// --cpu-prof is refused in NODE_OPTIONS, so it goes on the command line.
const profileArgs = () => (values['api-cpu-profile'] ? ['--cpu-prof', `--cpu-prof-dir=${values['api-cpu-profile']}`] : []);

async function scaleRun(): Promise<void> {
  const sizes = values.sizes!.split(',').map(Number);
  const rows = await runScale({
    serverUrl: location.url,
    sizes,
    otherClients: Number(values['other-clients']),
    seconds: settings.seconds,
    connections: settings.connections,
    getRate: values.rate ? Number(values.rate) : undefined,
    createRate: values['create-rate'] ? Number(values['create-rate']) : undefined,
    pageEvents: Number(values['page-events']),
    rounds: num(values['scale-rounds'], 3, 1),
    api: { entry: await apiEntryPoint(), nodeOptions: values['api-node-options']!, nodeArgs: profileArgs(), logLevel: settings.logLevel, poolSize: settings.poolSize },
    keepDatabases: values['keep-database']!,
    say,
  });
  const date = new Date().toISOString();
  const note =
    `${cpus().length} × ${cpus()[0]?.model ?? 'unknown'}, Node ${process.versions.node}; PostgreSQL on ${location.source === 'url' ? "DATABASE_URL's server" : 'the embedded server'}; ` +
    `the load generator, the API and PostgreSQL share these cores, and other processes on the machine count in the load average (recorded per size). ` +
    `Each size is a database of its own, all loaded before anything is measured: half of the orders belong to the bench client, the other half to ${values['other-clients']} other clients in turn, so every stream's rows are spread over the whole table, and a CHECKPOINT writes each load back. ` +
    `Fixed rates are the same at every size (half of the smallest peak the sizes reach in a calibration pass, unless --rate / --create-rate); ${settings.seconds} s per measurement, ${settings.connections} connections; ` +
    `each stream position is timed over ${Math.ceil(Number(values['page-events']) / 500)} pages of 500 events on its second read of the span, the first read reported beside it (a short stream is read again; the tail is the last 5,000 events, read again). API: the production bundle, NODE_OPTIONS=${values['api-node-options']}, LOG_LEVEL=${settings.logLevel}, pool ${settings.poolSize}.`;
  const markdown = scaleMarkdown(date, rows, note);
  mkdirSync(values.out!, { recursive: true });
  const name = `${date.slice(0, 16).replace(':', '')}Z-scale`;
  writeFileSync(join(values.out!, `${name}.json`), `${JSON.stringify({ date, sizes, rows }, null, 2)}\n`);
  writeFileSync(join(values.out!, `${name}.md`), markdown);
  console.log(markdown);
  say(`written: ${join(values.out!, `${name}.json`)} and .md`);
}

if (values.scale) {
  await scaleRun();
  await location.stop();
  process.exit(0);
}

async function capacityRun(): Promise<void> {
  const rates = Object.fromEntries(values['capacity-rates']!.split(',').map((pair) => pair.split('=')).map(([k, v]) => [k, Number(v)]));
  const workerEntry = 'tmp/bench/delivery-worker/main.js';
  if (!values.source) await bundle('apps/delivery-worker/src/main.ts', join(REPO_ROOT, workerEntry));
  const results = await runCapacity({
    orders: Number(values['capacity-orders']),
    otherClients: Number(values['other-clients']),
    seconds: num(values.seconds, 15, 4),
    rates: { get: 100, page: 10, poll: 50, create: 20, simulate: 5, ...rates },
    deliveries: Number(values['capacity-deliveries']),
    replica: !values['capacity-skip-replica'],
    apiEntry: await apiEntryPoint(),
    workerEntry: values.source ? 'apps/delivery-worker/src/main.ts' : workerEntry,
    apiNodeOptions: values['api-node-options']!,
    logLevel: settings.logLevel,
    poolSize: settings.poolSize,
    say,
  });
  // The check: this run's storage predicted from the bytes per row of a run of another size.
  const referenceFile =
    values['capacity-reference'] === 'none'
      ? undefined
      : (values['capacity-reference'] ?? capacityResultFiles(values.out!).find((file) => {
          const events = readCapacity(file).data.events;
          return Math.max(events, results.data.events) / Math.max(1, Math.min(events, results.data.events)) >= 5;
        }));
  const check = referenceFile ? storageCheck(results, readCapacity(referenceFile), relative(REPO_ROOT, resolve(referenceFile))) : undefined;
  const output = { ...results, check };
  const markdown = capacityMarkdown(output);
  mkdirSync(values.out!, { recursive: true });
  const name = `${results.date.slice(0, 16).replace(':', '')}Z-capacity`;
  writeFileSync(join(values.out!, `${name}.json`), `${JSON.stringify(output, null, 2)}\n`);
  writeFileSync(join(values.out!, `${name}.md`), markdown);
  console.log(markdown);
  say(`written: ${join(values.out!, `${name}.json`)} and .md; \`npm run docs\` puts its figures into docs/capacity.md`);
}

if (values.audit) {
  const results = await measureAuditCost({
    serverUrl: location.url,
    apiEntry: await apiEntryPoint(),
    apiNodeOptions: values['api-node-options']!,
    logLevel: settings.logLevel,
    poolSize: settings.poolSize,
    orders: settings.orders,
    seconds: settings.seconds,
    connections: settings.connections,
    rounds: num(values['audit-rounds'], 3, 2),
    say,
  });
  const date = new Date().toISOString();
  const note =
    `${cpus().length} × ${cpus()[0]?.model ?? 'unknown'}, Node ${process.versions.node}; load average ${results.loadAverage.before.map((n) => n.toFixed(2)).join(' ')} before, ${results.loadAverage.after.map((n) => n.toFixed(2)).join(' ')} after; ` +
    `the load generator, the API and PostgreSQL share these cores. ${settings.orders} orders, ${settings.seconds} s per measurement, ${settings.connections} connections, one API process at a time (the production bundle, pool ${settings.poolSize}); ` +
    'auditing off is PARTNER_BENCH_UNAUDITED_READS=true, a bench-only setting.';
  const markdown = auditCostMarkdown(date, results, note);
  mkdirSync(values.out!, { recursive: true });
  const name = `${date.slice(0, 16).replace(':', '')}Z-audit${quick ? '-quick' : ''}`;
  writeFileSync(join(values.out!, `${name}.json`), `${JSON.stringify({ date, quick, settings, ...results }, null, 2)}\n`);
  writeFileSync(join(values.out!, `${name}.md`), markdown);
  console.log(markdown);
  say(`written: ${join(values.out!, `${name}.json`)} and .md`);
  await location.stop();
  process.exit(0);
}

if (values['capacity-report']) {
  const file = values['capacity-report'];
  const markdown = capacityMarkdown(readCapacity(file));
  writeFileSync(file.replace(/\.json$/, '.md'), markdown);
  console.log(markdown);
  await location.stop();
  process.exit(0);
}

if (values.capacity) {
  await capacityRun();
  await location.stop();
  process.exit(0);
}

if (values.upgrade) {
  const figures = await rollingUpgrade({ serverUrl: location.url, deliveryRows: Number(values['delivery-rows']), log: say });
  const date = new Date().toISOString();
  mkdirSync(values.out!, { recursive: true });
  const name = `${date.slice(0, 16).replace(':', '')}Z-upgrade-${figures.deliveryRows}`;
  writeFileSync(join(values.out!, `${name}.json`), `${JSON.stringify({ date, loadavg: loadavg(), ...figures }, null, 2)}\n`);
  console.log(upgradeSummary(figures));
  say(`written: ${join(values.out!, `${name}.json`)}`);
  await location.stop();
  process.exit(0);
}

if (values.soak) {
  const results = await runSoak({
    serverUrl: location.url,
    apiEntry: await apiEntryPoint(),
    apiNodeOptions: values['api-node-options']!,
    minutes: Number(values.minutes),
    apis: 2,
    workers: 2,
    clients: 6,
    loopsPerClient: 6,
    killEverySeconds: Number(values['kill-every']),
    busy: Number(values.busy),
    say,
  });
  const date = new Date().toISOString();
  const markdown = soakMarkdown(date, results);
  mkdirSync(values.out!, { recursive: true });
  const name = `${date.slice(0, 16).replace(':', '')}Z-soak`;
  writeFileSync(join(values.out!, `${name}.json`), `${JSON.stringify({ date, loadAverageBefore: loadBefore, loadAverageAfter: loadavg(), ...results }, null, 2)}\n`);
  writeFileSync(join(values.out!, `${name}.md`), markdown);
  console.log(markdown);
  say(`written: ${join(values.out!, `${name}.json`)} and .md`);
  await location.stop();
  process.exit(results.unavailable.count === 0 ? 0 : 1);
}

const noisyNeighbour = async (): Promise<NoisyNeighbourResults | NotMeasured> =>
  values['no-noisy-neighbour']
    ? { measured: false, reason: 'skipped (--no-noisy-neighbour)' }
    : measureNoisyNeighbour({
        serverUrl: location.url,
        apiEntry: await apiEntryPoint(),
        apiNodeOptions: values['api-node-options']!,
        logLevel: settings.logLevel,
        poolSize: settings.poolSize,
        seconds: num(values.seconds, 20, 4),
        readRate: 100,
        // 20 webhooks a second over 20 s: a p99 over 400 first attempts, not the slowest of 50.
        orderRate: 20,
        floodConnections: 64,
        floodKeys: 6,
        createBudget: Number(values['noisy-create-budget']),
        deadLetters: quick ? 1_000 : 10_000,
        slowAnswerMs: 9_000,
        waitingPerClient: 10,
        say,
      });

if (values['noisy-neighbour-only']) {
  const results = await noisyNeighbour();
  const date = new Date().toISOString();
  const markdown = 'measured' in results ? `Noisy neighbour: not measured (${results.reason}).\n` : noisyNeighbourMarkdown(results).join('\n');
  mkdirSync(values.out!, { recursive: true });
  const name = `${date.slice(0, 16).replace(':', '')}Z-noisy-neighbour`;
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.versions.node, loadAverageBefore: loadBefore, loadAverageAfter: loadavg() };
  writeFileSync(join(values.out!, `${name}.json`), `${JSON.stringify({ date, quick, machine, noisyNeighbour: results }, null, 2)}\n`);
  writeFileSync(join(values.out!, `${name}.md`), `## Benchmark ${date}${quick ? ' (quick)' : ''}\n\n${markdown}`);
  console.log(markdown);
  say(`written: ${join(values.out!, `${name}.json`)} and .md`);
  await location.stop();
  process.exit(0);
}

const benchDatabase = await createTestDatabase(location.url, 'bench');
say(`database: fresh ${new URL(benchDatabase.url).pathname.slice(1)} on ${location.source === 'url' ? "DATABASE_URL's server" : 'the embedded PostgreSQL'}`);

const services: ServiceProcess[] = [];
try {
  const loader = connectDatabase(benchDatabase.url, { max: 4, applicationName: 'bench-loader' });
  const data = await loadBenchData(loader, { orders: settings.orders, exclusive: true, log: (line) => say(`data: ${line}`) }).finally(() => loader.close());

  const env = {
    DATABASE_URL: benchDatabase.url,
    LOG_LEVEL: settings.logLevel,
    PARTNER_DB_POOL_SIZE: String(settings.poolSize),
    PARTNER_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
    PARTNER_METRICS_PORT: String(await freePort()),
  };
  const apiEntry = await apiEntryPoint();
  const api = await startService(apiEntry, { ...env, NODE_OPTIONS: values['api-node-options']! }, {
    port: await freePort(),
    readyPath: '/readyz',
    nodeArgs: profileArgs(),
  });
  services.push(api);
  const baseline = await startService('tools/bench/baseline-server.ts', env, { port: await freePort() });
  services.push(baseline);
  const rss = sampleRss(api.pid);
  say(`services: partner API ${api.url} (pid ${api.pid}), baseline ${baseline.url}`);

  const getRequest = getOrderRequests(data);
  const createRequest = createOrderRequests(data);
  const load = (service: ServiceProcess, title: string, request: typeof getRequest, expectStatus: number, rate?: number, seconds = settings.seconds) =>
    runLoad({ url: service.url, title, seconds, connections: settings.connections, rate, request, expectStatus, pid: service.pid });

  say('GET /v1/orders/{id}');
  await load(api, 'warm-up API', getRequest, 200, undefined, warmupSeconds);
  await load(baseline, 'warm-up baseline', getRequest, 200, undefined, warmupSeconds);
  const getPeakApi = await load(api, 'API GET order, peak', getRequest, 200);
  const getPeakBaseline = await load(baseline, 'baseline GET order, peak', getRequest, 200);
  const halfApi = Math.max(1, Math.round(getPeakApi.requestsPerSecond / 2));
  const halfBaseline = Math.max(1, Math.round(getPeakBaseline.requestsPerSecond / 2));
  const getHalfApi = await load(api, 'API GET order, half of peak', getRequest, 200, halfApi);
  const getHalfBaseline = await load(baseline, 'baseline GET order, half of peak', getRequest, 200, halfBaseline);

  say('POST /v1/orders');
  await load(api, 'warm-up API', createRequest, 201, undefined, warmupSeconds);
  await load(baseline, 'warm-up baseline', createRequest, 201, undefined, warmupSeconds);
  const createApi = await load(api, 'API create order, peak', createRequest, 201);
  const createBaseline = await load(baseline, 'baseline create order, peak', createRequest, 201);

  say('GET /v1/events');
  const eventCount = Math.min(settings.events, data.eventCount);
  const eventsApi = await pageEvents(api.url + PARTNER_BASE_PATH, data.key, eventCount);
  const eventsBaseline = await pageEvents(baseline.url + PARTNER_BASE_PATH, data.key, eventCount);
  say(`  API ${Math.round(eventsApi.eventsPerSecond)} events/s, baseline ${Math.round(eventsBaseline.eventsPerSecond)} events/s`);

  rss.stop();
  const afterLoad = rssOf(api.pid) ?? rss.last();
  const apiErrors = api.stderr().trim();
  for (const service of services.splice(0)) await service.stop();
  if (apiErrors) say(`partner API stderr: ${apiErrors.slice(-1000)}`);

  say('webhooks');
  const webhooks = values['no-webhooks']
    ? { measured: false as const, reason: 'skipped (--no-webhooks)' }
    : await measureWebhooks({ serverUrl: location.url, rate: settings.webhookRate, seconds: settings.webhookSeconds, backlog: settings.backlog, timeoutMs: 240_000 });

  say('noisy neighbour');
  const neighbour = await noisyNeighbour();

  const date = new Date().toISOString();
  const partial: Omit<BenchResults, 'targets'> = {
    date,
    quick,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      node: process.versions.node,
      loadAverageBefore: loadBefore,
      loadAverageAfter: loadavg(),
      note: 'The load generator, both servers and PostgreSQL share these cores; other processes on the machine count in the load average.',
    },
    settings: { ...settings, warmupSeconds, api: apiEntry, apiNodeOptions: values['api-node-options']! },
    data: { orders: data.orderIds.length, events: data.eventCount },
    getOrder: { peak: { api: getPeakApi, baseline: getPeakBaseline }, half: { api: getHalfApi, baseline: getHalfBaseline }, halfRate: { api: halfApi, baseline: halfBaseline } },
    createOrder: { api: createApi, baseline: createBaseline },
    events: { api: eventsApi, baseline: eventsBaseline },
    webhooks,
    rss: { peakBytes: rss.peak(), afterLoadBytes: afterLoad },
    noisyNeighbour: neighbour,
  };
  const results: BenchResults = { ...partial, targets: checkTargets(partial) };
  const markdown = markdownReport(results);
  mkdirSync(values.out!, { recursive: true });
  const name = `${date.slice(0, 16).replace(':', '')}Z${quick ? '-quick' : ''}`;
  writeFileSync(join(values.out!, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(values.out!, `${name}.md`), markdown);
  console.log(markdown);
  say(`written: ${join(values.out!, `${name}.json`)} and .md`);
  for (const failed of [getPeakApi, getHalfApi, createApi] as LoadResult[]) {
    if (failed.failures > 0) say(`note: ${failed.failures} unexpected responses: ${JSON.stringify(failed.statusCodes)}`);
  }
} finally {
  for (const service of services) await service.stop().catch(() => undefined);
  if (!values['keep-database']) await benchDatabase.drop();
  else say(`database kept: ${benchDatabase.url}`);
  await location.stop();
}
process.exit(0);
