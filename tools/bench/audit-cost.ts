import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { connectDatabase, createTestDatabase, freePort } from '@lop/db';
import { runLoad, type LoadResult } from './http-load';
import { loadBenchData } from './load-data';
import { startService } from './processes';
import { getOrderRequests } from './requests';

/**
 * `npm run bench -- --audit`: what the audit trail of reads costs (docs/audit.md). GET
 * /v1/orders/{id} at peak through the production bundle, with every read audited (the record
 * committed on the primary before the answer) and with auditing switched off by
 * PARTNER_BENCH_UNAUDITED_READS — a setting for this measurement only, refused with a production
 * base URL. The two modes alternate, one API process at a time on the same data, so drift in the
 * machine's load hits both; the figure is the ratio of their mean throughputs (goal ≥ 0.9).
 */
export interface AuditCostOptions {
  serverUrl: string;
  apiEntry: string;
  apiNodeOptions: string;
  logLevel: string;
  poolSize: number;
  orders: number;
  seconds: number;
  connections: number;
  /** Measurements per mode, alternating on/off. */
  rounds: number;
  say: (line: string) => void;
}

export interface AuditCostResults {
  on: LoadResult[];
  off: LoadResult[];
  mean: { on: number; off: number };
  /** Mean throughput with auditing on ÷ off. */
  ratio: number;
  goal: number;
  /** Records written during the audited rounds, and during the unaudited ones (must be 0). */
  recordsWritten: { on: number; off: number };
  loadAverage: { before: number[]; after: number[] };
}

export const AUDIT_COST_GOAL = 0.9;

export async function measureAuditCost(options: AuditCostOptions): Promise<AuditCostResults> {
  const before = loadavg();
  const database = await createTestDatabase(options.serverUrl, 'bench_audit');
  const connection = connectDatabase(database.url, { max: 4, applicationName: 'bench-audit' });
  try {
    const data = await loadBenchData(connection, { orders: options.orders, exclusive: true, log: (line) => options.say(`data: ${line}`) });
    const request = getOrderRequests(data);
    const records = async () => (await connection.sql<{ n: number }[]>`select count(*)::int as n from audit_records where kind = 'read'`)[0].n;
    const env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: options.logLevel,
      PARTNER_DB_POOL_SIZE: String(options.poolSize),
      PARTNER_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      NODE_OPTIONS: options.apiNodeOptions,
      PARTNER_METRICS_PORT: '0',
    };
    const results: AuditCostResults['on'] = [];
    const off: AuditCostResults['off'] = [];
    const written = { on: 0, off: 0 };
    for (let round = 0; round < options.rounds * 2; round++) {
      const audited = round % 2 === 0;
      const api = await startService(options.apiEntry, { ...env, PARTNER_BENCH_UNAUDITED_READS: audited ? 'false' : 'true' }, { port: await freePort(), readyPath: '/readyz' });
      try {
        const load = (title: string, seconds: number) => runLoad({ url: api.url, title, seconds, connections: options.connections, request, expectStatus: 200, pid: api.pid });
        await load(`warm-up, auditing ${audited ? 'on' : 'off'}`, Math.max(1, Math.round(options.seconds / 4)));
        const start = await records();
        const result = await load(`GET order, auditing ${audited ? 'on' : 'off'}`, options.seconds);
        written[audited ? 'on' : 'off'] += (await records()) - start;
        (audited ? results : off).push(result);
        options.say(`audit ${audited ? 'on ' : 'off'}: ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${result.failures} failures`);
      } finally {
        await api.stop();
      }
    }
    const mean = (list: LoadResult[]) => list.reduce((sum, r) => sum + r.requestsPerSecond, 0) / list.length;
    const m = { on: mean(results), off: mean(off) };
    return { on: results, off, mean: m, ratio: m.on / m.off, goal: AUDIT_COST_GOAL, recordsWritten: written, loadAverage: { before, after: loadavg() } };
  } finally {
    await connection.close();
    await database.drop();
  }
}

export function auditCostMarkdown(date: string, results: AuditCostResults, note: string): string {
  const row = (mode: string, list: LoadResult[]) =>
    list.map((r, i) => `| ${mode} | ${i + 1} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.cpuMsPerRequest?.toFixed(2) ?? '-'} | ${r.failures} |`);
  return [
    `## Audit trail cost ${date}`,
    '',
    `GET /v1/orders/{id} at peak, auditing on ÷ off: **${results.ratio.toFixed(3)} ×** (goal ≥ ${results.goal}; mean ${results.mean.on.toFixed(0)} vs ${results.mean.off.toFixed(0)} req/s). ` +
      `Read records written: ${results.recordsWritten.on} with auditing on, ${results.recordsWritten.off} off.`,
    '',
    '| auditing | round | req/s | p50 ms | p99 ms | API CPU ms/request | failures |',
    '|---|---|---|---|---|---|---|',
    ...row('on', results.on),
    ...row('off', results.off),
    '',
    note,
    '',
  ].join('\n');
}
