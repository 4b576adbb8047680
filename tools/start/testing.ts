import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Processes whose command line names the folder (the embedded PostgreSQL runs with `-D <folder>`). */
export function processesOf(folder: string): { pid: number; args: string }[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null && match[2].includes(folder) && !match[2].startsWith('ps '))
    .map((match) => ({ pid: Number(match[1]), args: match[2] }));
}

export interface Instance {
  npm: ChildProcessWithoutNullStreams;
  output: () => string;
  /** npm itself has exited (at once on a SIGTERM to the group, while the service still drains). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Every writer of npm's output has gone: the service it ran has exited too. */
  closed: Promise<void>;
}

/** `npm start` as a process manager runs it: through npm, in a process group of its own. */
export function npmStart(env: Record<string, string>): Instance {
  const npm = spawn('npm', ['start'], { cwd: REPO_ROOT, env: { ...process.env, ...env }, detached: true });
  let output = '';
  npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => npm.once('exit', (code, signal) => resolve({ code, signal })));
  const closed = new Promise<void>((resolve) => npm.once('close', () => resolve()));
  return { npm, output: () => output, exited, closed };
}

export async function bannerOf(instance: Instance, withinMs = 120_000): Promise<string> {
  const deadline = Date.now() + withinMs;
  while (!instance.output().includes('Stop with Ctrl-C.')) {
    if (instance.npm.exitCode !== null) throw new Error(`npm start exited early: ${instance.output()}`);
    if (Date.now() > deadline) throw new Error(`no banner in time: ${instance.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return instance.output();
}

/** The admin CLI against the same data folder (it uses the embedded server `npm start` runs). */
export function admin(env: Record<string, string>, ...args: string[]): string {
  return execFileSync(process.execPath, ['tools/build/run-bundled.mjs', '--inline', 'tools/admin/main.ts', ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, encoding: 'utf8' });
}
