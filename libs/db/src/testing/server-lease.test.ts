import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { otherHolders, takeLease, whenLastHolder } from './server-lease';

const sleeper = () => spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
const exited = (child: ReturnType<typeof sleeper>) => new Promise((resolve) => child.once('exit', resolve));

describe('test runs sharing the embedded PostgreSQL', () => {
  it('keeps the owner waiting while another live run holds a lease, and lets it go when that run releases it', async () => {
    const folder = join(mkdtempSync(join(tmpdir(), 'lease-')), 'leases');
    const releaseOwn = takeLease(folder);
    const other = sleeper();
    const releaseOther = takeLease(folder, other.pid!);
    try {
      expect(otherHolders(folder)).toEqual([other.pid]);
      let done = false;
      const waiting = whenLastHolder(folder).then(() => (done = true));
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(done).toBe(false);
      releaseOther();
      await waiting;
      expect(otherHolders(folder)).toEqual([]);
    } finally {
      other.kill();
      releaseOwn();
    }
  });

  it('does not wait for a run that died without releasing its lease, and removes that lease', async () => {
    const folder = join(mkdtempSync(join(tmpdir(), 'lease-')), 'leases');
    const other = sleeper();
    takeLease(folder, other.pid!);
    expect(otherHolders(folder)).toEqual([other.pid]);
    other.kill('SIGKILL');
    await exited(other);
    await whenLastHolder(folder);
    expect(existsSync(join(folder, String(other.pid)))).toBe(false);
  });
});
