import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Test runs that share one embedded PostgreSQL (`npx nx affected -t test` runs each project's
 * vitest as its own process, and only the first starts the server) each hold a lease: a file named
 * by their pid in `folder`. The run that started the server stops it with its own process (the
 * server's guard stops it when its owner exits), so at its teardown it waits until no other live
 * run holds a lease; otherwise the projects still running lose their database mid-test.
 * A lease is taken before the server is looked for, so an owner never misses a run that found it.
 */
export function takeLease(folder: string, pid = process.pid): () => void {
  mkdirSync(folder, { recursive: true });
  const file = join(folder, String(pid));
  writeFileSync(file, '');
  return () => rmSync(file, { force: true });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but is not ours to signal.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The pids of the other live runs holding a lease; the leases of runs that died are removed. */
export function otherHolders(folder: string, pid = process.pid): number[] {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  const holders: number[] = [];
  for (const name of names) {
    const holder = Number(name);
    if (!Number.isInteger(holder) || holder <= 0 || holder === pid) continue;
    if (alive(holder)) holders.push(holder);
    else rmSync(join(folder, name), { force: true });
  }
  return holders;
}

/** Resolves once no other live run holds a lease, saying once whom it waits for. */
export async function whenLastHolder(folder: string, log: (line: string) => void = () => undefined, pid = process.pid): Promise<void> {
  let told = false;
  for (let holders = otherHolders(folder, pid); holders.length > 0; holders = otherHolders(folder, pid)) {
    if (!told) log(`the embedded PostgreSQL stays up while other test runs use it (pids ${holders.join(', ')})`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
