import { execFileSync } from 'node:child_process';

/** Processes whose command line names the folder (the embedded PostgreSQL runs with `-D <folder>`). */
export function processesOf(folder: string): { pid: number; args: string }[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null && match[2].includes(folder) && !match[2].startsWith('ps '))
    .map((match) => ({ pid: Number(match[1]), args: match[2] }));
}
