import { spawn } from 'node:child_process';
import { REPO_ROOT } from './processes';

export interface WebhookFigures {
  measured: true;
  rate: number;
  seconds: number;
  backlog: number;
  p50: number;
  p99: number;
  max: number;
  drainPerSecond: number;
  drainSeconds: number;
  /** The same number of deliveries, all one client's, drained with no other client waiting. */
  singleClientPerSecond: number;
  singleClientSeconds: number;
  /** The same number of signed POSTs to the same receiver at the worker's concurrency, no queue: the drain's yardstick. */
  bareDeliveriesPerSecond: number;
  /** The same events' commit-to-read latency for a partner holding GET /v1/events?wait=25 (absent from results before it was measured). */
  waitingReader?: { p50: number; p99: number; max: number };
}

export interface NotMeasured {
  measured: false;
  reason: string;
}

/**
 * Webhook delivery, measured by the webhooks' own benchmark (tools/bench/webhook-latency.ts) as a
 * child process: commit-to-receipt latency at a steady event rate, then the drain rate of a backlog
 * of several clients, of one client's backlog alone, and of a bare delivery loop to the same receiver, with a real receiver on 127.0.0.1 and its own fresh database. Its printed figures are parsed here.
 */
export async function measureWebhooks(options: { serverUrl: string; rate: number; seconds: number; backlog: number; timeoutMs: number }): Promise<WebhookFigures | NotMeasured> {
  const args = ['--import', 'tsx', 'tools/bench/webhook-latency.ts', '--rate', String(options.rate), '--seconds', String(options.seconds), '--backlog', String(options.backlog)];
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, DATABASE_URL: options.serverUrl, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    process.stderr.write(chunk.toString().replace(/^/gm, '    '));
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  const latency = /median (\d+(?:\.\d+)?) ms, p99 (\d+(?:\.\d+)?) ms, max (\d+(?:\.\d+)?) ms/.exec(output);
  const drain = /drained in (\d+(?:\.\d+)?) s.*?: (\d+) deliveries\/s/.exec(output);
  const single = /one client's backlog: .*? drained alone in (\d+(?:\.\d+)?) s.*?: (\d+) deliveries\/s/.exec(output);
  const bare = /bare delivery loop: .*: (\d+) deliveries\/s/.exec(output);
  const reader = /commit-to-read latency: p50 (\d+) ms, p99 (\d+) ms, max (\d+) ms/.exec(output);
  if (code !== 0 || !latency || !drain || !single || !bare) {
    return { measured: false, reason: `tools/bench/webhook-latency.ts ${code === null ? 'was stopped after the time limit' : `exited with ${code}`}${latency && drain && single && bare ? '' : ' without its figures'}: ${output.trim().split('\n').slice(-3).join(' / ')}` };
  }
  return {
    measured: true,
    rate: options.rate,
    seconds: options.seconds,
    backlog: options.backlog,
    p50: Number(latency[1]),
    p99: Number(latency[2]),
    max: Number(latency[3]),
    drainSeconds: Number(drain[1]),
    drainPerSecond: Number(drain[2]),
    singleClientSeconds: Number(single[1]),
    singleClientPerSecond: Number(single[2]),
    bareDeliveriesPerSecond: Number(bare[1]),
    ...(reader ? { waitingReader: { p50: Number(reader[1]), p99: Number(reader[2]), max: Number(reader[3]) } } : {}),
  };
}
