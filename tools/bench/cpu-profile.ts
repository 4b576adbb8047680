/**
 * Where the partner API's CPU goes per request: runs the production bundle with V8's sampling
 * profiler, drives one route at a time (GET /v1/orders/{id}, POST /v1/orders, GET /v1/events) with the bench's own
 * requests, and sums the profile's samples taken during the measured load only (startup and
 * warm-up excluded) by function and by package, mapped back to our sources through the bundle's
 * source map.
 *
 *   npm run bench:profile                      # 8 s per route, 8 connections
 *   npm run bench:profile -- --seconds 15 --top 40 --keep /tmp/prof
 *   npm run bench:profile -- --summarise /tmp/prof/get.cpuprofile   # an existing profile, whole
 *
 * Absolute figures include the profiler's own overhead (V8 samples every 1 ms here, a few per cent)
 * and move with the machine's load; compare runs of the same day, and the shares more than the sums.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { connectDatabase, createTestDatabase, freePort, locateDatabase } from '@lop/db';
import { loadConfig } from '@lop/domain';
import { runLoad } from './http-load';
import { loadBenchData } from './load-data';
import { bundle, REPO_ROOT, startService } from './processes';
import { createOrderRequests, getOrderRequests, type BenchRequest } from './requests';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** CPU time sampled inside the window, idle excluded, in milliseconds. */
  busyMs: number;
  byFunction: { name: string; selfMs: number }[];
  byArea: { name: string; selfMs: number }[];
  /** Time under (inclusive) each of our own source files, counted once per sample. */
  byOwnFileInclusive: { name: string; ms: number }[];
}

const maps = new Map<string, SourceMap | null>();
function sourceMapOf(url: string): SourceMap | null {
  if (!maps.has(url)) {
    try {
      const file = fileURLToPath(url.startsWith('file:') ? url : `file://${url}`);
      maps.set(url, new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))));
    } catch {
      maps.set(url, null);
    }
  }
  return maps.get(url)!;
}

/** `function (file:line)` with the file relative to the repository, through the bundle's source map when there is one. */
function frameName(frame: ProfileNode['callFrame']): { name: string; area: string; ownFile: string | null } {
  const fn = frame.functionName || '(anonymous)';
  if (!frame.url) return { name: fn, area: fn.startsWith('(') ? fn : 'native', ownFile: null };
  if (frame.url.startsWith('node:')) return { name: `${fn} (${frame.url})`, area: 'node core', ownFile: null };
  const map = frame.url.includes('/tmp/') || frame.url.endsWith('main.js') ? sourceMapOf(frame.url) : null;
  const entry = map?.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string; originalLine?: number } | undefined;
  let file = entry?.originalSource ? fileURLToPath(new URL(entry.originalSource, frame.url)) : fileURLToPath(frame.url.startsWith('file:') ? frame.url : `file://${frame.url}`);
  file = relative(REPO_ROOT, file);
  const line = entry?.originalLine !== undefined ? entry.originalLine + 1 : frame.lineNumber + 1;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];
  const area = pkg ?? file.split('/').slice(0, 4).join('/');
  return { name: `${fn} (${file}:${line})`, area, ownFile: pkg ? null : file };
}

/** Sums the samples taken between `fromUs` and `toUs` (V8's monotonic clock, microseconds); the whole profile without them. */
export function summariseProfile(profile: CpuProfile, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const names = new Map(profile.nodes.map((node) => [node.id, frameName(node.callFrame)]));
  const self = new Map<string, number>();
  const area = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    // A sample's delta is the time since the previous one: charge it to the sample that ends it.
    const delta = profile.timeDeltas[i] / 1000;
    if (window && (t < window.fromUs || t > window.toUs)) continue;
    const id = profile.samples[i];
    const frame = names.get(id)!;
    if (frame.name === '(idle)') continue;
    busy += delta;
    self.set(frame.name, (self.get(frame.name) ?? 0) + delta);
    area.set(frame.area, (area.get(frame.area) ?? 0) + delta);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const file = names.get(at)!.ownFile;
      if (file && !seen.has(file)) {
        seen.add(file);
        inclusive.set(file, (inclusive.get(file) ?? 0) + delta);
      }
      if (!byId.has(at)) break;
    }
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return {
    busyMs: busy,
    byFunction: sorted(self).map(([name, selfMs]) => ({ name, selfMs })),
    byArea: sorted(area).map(([name, selfMs]) => ({ name, selfMs })),
    byOwnFileInclusive: sorted(inclusive).map(([name, ms]) => ({ name, ms })),
  };
}

/** A text report of a summary, per request when `requests` is given. */
export function profileReport(title: string, summary: ProfileSummary, requests: number | null, top: number): string {
  const per = (ms: number) => (requests ? `${((ms / requests) * 1000).toFixed(0).padStart(6)} µs/req` : `${ms.toFixed(0).padStart(8)} ms`);
  const share = (ms: number) => `${((100 * ms) / summary.busyMs).toFixed(1).padStart(5)} %`;
  const lines = [`## ${title}`, `busy CPU ${summary.busyMs.toFixed(0)} ms${requests ? ` over ${requests} requests: ${((summary.busyMs / requests) * 1000).toFixed(0)} µs per request` : ''}`, '', 'self time by area:'];
  for (const row of summary.byArea.slice(0, top)) lines.push(`  ${per(row.selfMs)} ${share(row.selfMs)}  ${row.name}`);
  lines.push('', 'self time by function:');
  for (const row of summary.byFunction.slice(0, top)) lines.push(`  ${per(row.selfMs)} ${share(row.selfMs)}  ${row.name}`);
  lines.push('', 'inclusive time by our own source file:');
  for (const row of summary.byOwnFileInclusive.slice(0, top)) lines.push(`  ${per(row.ms)} ${share(row.ms)}  ${row.name}`);
  return `${lines.join('\n')}\n`;
}

/**
 * System calls per request while `load` runs, from `strace -c -f` attached to the process: each
 * write to a socket of the database or of the client is a system call, and on loopback TCP the
 * kernel's delivery to the other end is charged to the writer. strace slows the process down;
 * only the counts mean anything.
 */
async function syscallsPerRequest(pid: number, load: () => Promise<number>): Promise<string> {
  const strace = spawn('strace', ['-c', '-f', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  strace.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const requests = await load();
  const exited = new Promise((resolve) => strace.once('exit', resolve));
  strace.kill('SIGINT');
  await exited;
  const rows = out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols.length >= 5 && /^\d/.test(cols[0]) && cols.at(-1) !== 'total')
    .map((cols) => ({ name: cols.at(-1)!, calls: Number(cols[3]) }))
    .sort((a, b) => b.calls - a.calls);
  const total = rows.reduce((sum, row) => sum + row.calls, 0);
  return [`system calls per request over ${requests} requests: ${(total / requests).toFixed(1)}`, ...rows.slice(0, 12).map((row) => `  ${(row.calls / requests).toFixed(2).padStart(7)}  ${row.name}`), '', ''].join('\n');
}

/**
 * CPU time from `perf script`, each sample charged to the nearest JavaScript function on its stack
 * (V8's builtins, inline caches and the system calls a function makes count as that function's),
 * named through the map V8 writes with --perf-basic-prof and then through the bundle's source map.
 * Samples with no JavaScript frame are named by their thread (the main thread's event loop, V8's
 * GC helpers, libuv's pool) and innermost symbol.
 */
function perfReport(title: string, perfData: string, pid: number, requests: number, top: number): string {
  const out = spawnSync('perf', ['script', '-i', perfData, '-F', 'tid,period,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30 }).stdout;
  const nearest = new Map<string, number>();
  const area = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const frames = new Map<string, ReturnType<typeof frameName> | null>();
  const jsFrame = (sym: string) => {
    if (!frames.has(sym)) {
      const js = /^JS:[*~^]?(\S*) (\S+?):(\d+):(\d+)$/.exec(sym);
      frames.set(sym, js ? frameName({ functionName: js[1], url: js[2].startsWith('/') ? `file://${js[2]}` : js[2], lineNumber: Number(js[3]) - 1, columnNumber: Number(js[4]) - 1 }) : null);
    }
    return frames.get(sym)!;
  };
  let totalMs = 0;
  const add = (m: Map<string, number>, key: string, ms: number) => m.set(key, (m.get(key) ?? 0) + ms);
  for (const block of out.split('\n\n')) {
    const lines = block.split('\n').filter(Boolean);
    const head = /^\s*(\d+)\s+(\d+)/.exec(lines[0] ?? '');
    if (!head) continue;
    const ms = Number(head[2]) / 1e6;
    totalMs += ms;
    const stack = lines.slice(1).map((line) => /^\s*[0-9a-f]+ (.*) \((.*)\)$/.exec(line)).filter((m) => m !== null).map((m) => ({ sym: m[1], dso: m[2] }));
    const js = stack.map((f) => jsFrame(f.sym)).filter((f) => f !== null);
    if (js.length > 0) {
      add(nearest, js[0].name, ms);
      add(area, js[0].area, ms);
    } else {
      const thread = Number(head[1]) === pid ? 'main thread' : 'other threads';
      const leaf = stack[0] ? `${stack[0].sym} (${stack[0].dso.split('/').at(-1)})` : '?';
      const gc = stack.some((f) => /Heap|Scaveng|Mark|Sweep|GC/.test(f.sym));
      add(nearest, `[${thread}${gc ? ', GC' : ''}] ${leaf}`, ms);
      add(area, `[${thread}${gc ? ', GC' : ', no JS frame'}]`, ms);
    }
    for (const file of new Set(js.map((f) => f.ownFile).filter((f) => f !== null))) add(inclusive, file, ms);
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  const per = (ms: number) => `${((ms / requests) * 1000).toFixed(0).padStart(6)} µs/req ${((100 * ms) / totalMs).toFixed(1).padStart(5)} %`;
  return [
    `## ${title}`,
    `perf: ${totalMs.toFixed(0)} ms of CPU sampled in process ${pid}: ${((totalMs / requests) * 1000).toFixed(0)} µs per request`,
    '',
    'by area of the nearest JavaScript frame:',
    ...sorted(area).map(([name, ms]) => `  ${per(ms)}  ${name}`),
    '',
    'by nearest JavaScript function:',
    ...sorted(nearest).map(([name, ms]) => `  ${per(ms)}  ${name}`),
    '',
    'inclusive, by our own source file:',
    ...sorted(inclusive).map(([name, ms]) => `  ${per(ms)}  ${name}`),
    '',
  ].join('\n');
}

/** The process's user and system CPU time so far, in milliseconds (/proc, Linux). */
function userAndSystemMs(pid: number): { user: number; system: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 };
}

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '8' },
      connections: { type: 'string', default: '8' },
      orders: { type: 'string', default: '1000' },
      top: { type: 'string', default: '30' },
      keep: { type: 'string' },
      summarise: { type: 'string' },
      pid: { type: 'string' },
      requests: { type: 'string' },
      only: { type: 'string' },
      // Also counts the API's system calls per request (strace -c) over an extra, shorter load.
      syscalls: { type: 'boolean', default: false },
      // Samples CPU time with Linux perf instead of V8's profiler (whose samples are wall-clock:
      // on a loaded machine a system call that lets the process be descheduled looks expensive).
      perf: { type: 'boolean', default: false },
      // Profiles the bare baseline server (baseline-server.ts) instead, for comparison.
      baseline: { type: 'boolean', default: false },
      // Extra environment for the API, e.g. --env LOG_LEVEL=warn (experiments).
      env: { type: 'string', multiple: true, default: [] },
      // Extra arguments for the API's node, e.g. --node-arg=--log-deopt (experiments).
      'node-arg': { type: 'string', multiple: true, default: [] },
      // Measures CPU per request only: no profiler attached.
      plain: { type: 'boolean', default: false },
    },
  });
  const top = Number(values.top);
  if (values.summarise?.endsWith('.perf.data')) {
    // The process id is the main thread's; requests (for per-request figures) from --requests.
    process.stdout.write(perfReport(values.summarise, values.summarise, Number(values.pid), Number(values.requests ?? 1), top));
    return;
  }
  if (values.summarise) {
    const profile = JSON.parse(readFileSync(values.summarise, 'utf8')) as CpuProfile;
    process.stdout.write(profileReport(values.summarise, summariseProfile(profile), null, top));
    return;
  }
  const config = loadConfig();
  const location = await locateDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.PARTNER_DATA_DIR, embeddedPort: config.PARTNER_EMBEDDED_PG_PORT });
  const database = await createTestDatabase(location.url, 'bench');
  const dir = values.keep ?? join(REPO_ROOT, 'tmp/bench/profiles');
  mkdirSync(dir, { recursive: true });
  try {
    const loader = connectDatabase(database.url, { max: 4, applicationName: 'bench-loader' });
    const data = await loadBenchData(loader, { orders: Number(values.orders), exclusive: true }).finally(() => loader.close());
    const entry = values.baseline ? 'tools/bench/baseline-server.ts' : 'tmp/bench/partner-api/main.js';
    if (!values.baseline) await bundle('apps/partner-api/src/main.ts', join(REPO_ROOT, entry));
    const env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: 'info',
      PARTNER_DB_POOL_SIZE: '10',
      PARTNER_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
      PARTNER_METRICS_PORT: String(await freePort()),
      NODE_OPTIONS: '--max-old-space-size=128',
      ...Object.fromEntries(values.env!.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])),
    };
    const routes: { name: string; request: () => BenchRequest; status: number }[] = [
      { name: 'get', request: getOrderRequests(data), status: 200 },
      { name: 'create', request: createOrderRequests(data), status: 201 },
      // The first page of 500 of the bench client's stream, again and again.
      { name: 'events', request: () => ({ path: `${PARTNER_BASE_PATH}/v1/events?limit=500`, headers: { authorization: `Bearer ${data.key}` } }), status: 200 },
    ];
    for (const route of routes.filter((r) => !values.only || values.only === r.name)) {
      const runDir = join(dir, `${route.name}-run`);
      rmSync(runDir, { recursive: true, force: true });
      const profiler = values.plain ? [] : values.perf ? ['--perf-basic-prof-only-functions', '--interpreted-frames-native-stack'] : ['--cpu-prof', `--cpu-prof-dir=${runDir}`];
      const nodeArgs = [...profiler, ...values['node-arg']!];
      const api = await startService(entry, env, { port: await freePort(), readyPath: values.baseline ? '/livez' : '/readyz', nodeArgs });
      try {
        const load = (seconds: number) => runLoad({ url: api.url, title: route.name, seconds, connections: Number(values.connections), request: route.request, expectStatus: route.status, pid: api.pid });
        await load(Math.max(2, Number(values.seconds) / 2));
        const perfData = join(dir, `${route.name}.perf.data`);
        const perf = values.perf ? spawn('perf', ['record', '-F', '999', '-g', '-p', String(api.pid), '-o', perfData], { stdio: 'ignore' }) : null;
        const fromUs = monotonicUs();
        const before = userAndSystemMs(api.pid);
        const result = await load(Number(values.seconds));
        const after = userAndSystemMs(api.pid);
        const toUs = monotonicUs();
        if (perf) {
          const exited = new Promise((resolve) => perf.once('exit', resolve));
          perf.kill('SIGINT');
          await exited;
        }
        if (values.syscalls) process.stdout.write(await syscallsPerRequest(api.pid, () => load(Math.max(2, Number(values.seconds) / 2)).then((r) => r.total)));
        if (values.plain) {
          process.stdout.write(`${route.name}: ${result.total} requests (${result.requestsPerSecond.toFixed(0)}/s, ${result.failures} failed), process CPU ${result.cpuMsPerRequest} ms per request (user ${((after.user - before.user) / result.total).toFixed(3)}, system ${((after.system - before.system) / result.total).toFixed(3)})\n`);
          continue;
        }
        if (perf) {
          const title = `${route.name}: ${result.total} requests in ${values.seconds} s (${result.requestsPerSecond.toFixed(0)}/s, ${result.failures} failed), process CPU ${result.cpuMsPerRequest} ms per request (user ${((after.user - before.user) / result.total).toFixed(3)}, system ${((after.system - before.system) / result.total).toFixed(3)})`;
          process.stdout.write(`${perfReport(title, perfData, api.pid, result.total, top)}\n`);
          continue;
        }
        await api.stop();
        const file = readdirSync(runDir).find((name) => name.endsWith('.cpuprofile'))!;
        const target = join(dir, `${route.name}.cpuprofile`);
        renameSync(join(runDir, file), target);
        rmSync(runDir, { recursive: true, force: true });
        const summary = summariseProfile(JSON.parse(readFileSync(target, 'utf8')) as CpuProfile, { fromUs, toUs });
        const title = `${route.name}: ${result.total} requests in ${values.seconds} s (${result.requestsPerSecond.toFixed(0)}/s, ${result.failures} failed), process CPU ${result.cpuMsPerRequest} ms per request (user ${((after.user - before.user) / result.total).toFixed(3)}, system ${((after.system - before.system) / result.total).toFixed(3)})`;
        process.stdout.write(`${profileReport(title, summary, result.total, top)}\n`);
        process.stderr.write(`profile: ${target}\n`);
      } finally {
        await api.stop();
      }
    }
  } finally {
    await database.drop();
    await location.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main().then(() => process.exit(0));
