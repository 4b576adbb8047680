import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  pid: number;
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * Runs an entry point of the repository as its own Node process and waits for `readyPath` to
 * answer 200: a TypeScript source through tsx, or a built .js bundle as production runs it.
 */
export async function startService(entry: string, env: Record<string, string>, options: { port: number; readyPath?: string; timeoutMs?: number; nodeArgs?: string[] }): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...(entry.endsWith('.ts') ? ['--import', 'tsx', entry] : [entry])], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env, PORT: String(options.port), HOST: '127.0.0.1' },
    // The API logs a line per request at info level, as in production; it goes to /dev/null here.
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${entry} did not become ready in time: ${stderr}`);
    }
    const ok = await fetch(url + (options.readyPath ?? '/livez')).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    child,
    url,
    pid: child.pid!,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resident set size of a process in bytes, from /proc (Linux). */
export function rssOf(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Samples a process's RSS every `everyMs` until stopped; reports the peak. */
export function sampleRss(pid: number, everyMs = 250) {
  let peak = 0;
  const samples: number[] = [];
  const timer = setInterval(() => {
    const rss = rssOf(pid);
    if (rss !== null) {
      peak = Math.max(peak, rss);
      samples.push(rss);
    }
  }, everyMs);
  timer.unref();
  return {
    peak: () => peak,
    last: () => samples.at(-1) ?? 0,
    stop: () => clearInterval(timer),
  };
}

/** User + system CPU time a process has used so far, in milliseconds, from /proc (Linux); null elsewhere. */
export function cpuTimeOf(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** Builds an app's entry point the way `nx build` does (tools/build/bundle.mjs) into `outfile`. */
export async function bundle(entry: string, outfile: string): Promise<void> {
  const child = spawn(process.execPath, ['tools/build/bundle.mjs', entry, outfile], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`bundling ${entry} failed: ${stderr}`);
}
