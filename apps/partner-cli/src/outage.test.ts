import { SCOPES } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '@lop/db';
import { createKey, revokeKey } from '@lop/domain';
import { testDatabaseUrl } from '@lop/testing';
import { rawArrayElements } from './raw-json';
import { jsonLines, lop, startLop, startReceiver, startService, type RunningLop, type TestService } from './testing/harness';

/**
 * The follow modes through a restart of the real API process (stopped with SIGTERM as a deploy
 * stops it, then started again on the same port and database), and every way a follow is stopped
 * (Ctrl-C, SIGTERM, SIGHUP) printing where to resume: the cursor and the command line flag.
 */

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service?.close();
});

const nextCursor = async () => (await service.get('/v1/events?limit=500')).body.data.next_cursor as string;

async function trigger(): Promise<string> {
  const run = await lop(service, ['trigger', 'happy_path', '--steps', '1', '--json']);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout).order_id;
}

describe('following through a restart of the service', () => {
  it('events tail -f and logs tail wait while the service is down, then print what happened after it came back; stopped, they print the cursor and how to resume', async () => {
    await trigger();
    const running: RunningLop[] = [];
    try {
      const events = startLop(service, ['events', 'tail', '--follow', '--json', '-n', '1', '--interval', '100']);
      const logs = startLop(service, ['logs', 'tail', '--json', '-n', '1', '--interval', '100']);
      // Stopped by SIGHUP while the service is down: it still says where it got to.
      const hungUp = startLop(service, ['events', 'tail', '--follow', '-n', '1', '--interval', '100']);
      running.push(events, logs, hungUp);
      await events.line(() => true);
      await hungUp.line((l) => l.startsWith('SEQ'));
      const cursorBeforeOutage = await nextCursor();

      await service.stop();
      for (const follower of running) await follower.errLine((l) => l.includes('waiting for the service'), 30_000);
      for (const follower of running) expect(follower.child.exitCode, follower.stderr()).toBeNull();

      const hup = await hungUp.signal('SIGHUP');
      expect(hup.code, hup.stderr).toBe(0);
      expect(hup.stderr).toContain(`cursor: ${cursorBeforeOutage}\nresume with: lop events tail --follow --from-cursor ${cursorBeforeOutage}\n`);

      await service.start();
      const orderId = await trigger();
      const page = await service.get(`/v1/events?cursor=${cursorBeforeOutage}&limit=500`);
      const raws = rawArrayElements(page.text, ['data', 'events']);
      expect(raws.length).toBeGreaterThan(0);
      await events.line((l) => l === raws.at(-1), 30_000);
      // The log of the requests made after the restart: trigger's simulate call for its new order.
      const simulate = JSON.parse(await logs.line((l) => l.includes('/v1/sandbox/orders/{orderId}/simulate') && l.includes('"method":"POST"'), 30_000));
      expect(simulate.status).toBe(200);

      const stopped = await events.signal('SIGTERM');
      expect(stopped.code, stopped.stderr).toBe(0);
      // Every event after the outage once, in order, exactly as the stream has it.
      expect(stopped.stdout.split('\n').filter(Boolean).slice(-raws.length)).toEqual(raws);
      const cursor = page.body.data.next_cursor;
      expect(stopped.stderr).toMatch(new RegExp(`cursor: ${cursor}\\nresume with: lop events tail --follow --from-cursor ${cursor} --json\\n$`));
      expect(raws.map((raw) => JSON.parse(raw).data.order_id)).toContain(orderId);

      const logsStopped = await logs.interrupt();
      expect(logsStopped.code, logsStopped.stderr).toBe(0);
      const [, logCursor] = /cursor: (\S+)\nresume with: lop logs tail --after (\S+) --json\n$/.exec(logsStopped.stderr) ?? [];
      expect(logCursor).toBeDefined();
      expect(logsStopped.stderr).toContain(`resume with: lop logs tail --after ${logCursor} --json`);
    } finally {
      for (const follower of running) follower.child.kill('SIGKILL');
    }
  }, 120_000);
});

describe('lop listen stopped by SIGTERM or SIGHUP', () => {
  it('stops at a safe point as with Ctrl-C: the summary, the cursor and the command that resumes', async () => {
    const receiver = await startReceiver();
    try {
      const text = startLop(service, ['listen', '--forward-to', receiver.url, '--interval', '100']);
      const json = startLop(service, ['listen', '--forward-to', receiver.url, '--interval', '100', '--json']);
      await text.line((l) => l.startsWith('Ready.'));
      const ready = JSON.parse(await json.line((l) => l.includes('"kind":"ready"')));

      const terminated = await text.signal('SIGTERM');
      expect(terminated.code, terminated.stderr).toBe(0);
      const cursor = /^Cursor: (\S+)$/m.exec(terminated.stdout)?.[1];
      expect(cursor).toBeDefined();
      expect(terminated.stdout).toContain(`Resume with: lop listen --forward-to ${receiver.url} --from-cursor ${cursor}`);

      const hungUp = await json.signal('SIGHUP');
      expect(hungUp.code, hungUp.stderr).toBe(0);
      expect(jsonLines(hungUp.stdout).at(-1)).toEqual({ kind: 'stopped', cursor: ready.cursor, delivered: 0, failed: 0, not_matching: 0, failures: [] });
    } finally {
      await receiver.close();
    }
  });
});

describe('a follow that fails for good', () => {
  it('its key revoked mid-run: events tail -f exits 1 with the API error and still prints the cursor and the command that resumes', async () => {
    await trigger();
    const connection = connectDatabase(testDatabaseUrl(), { max: 1, applicationName: 'partner-cli-outage-test' });
    try {
      const created = await createKey(connection.db, { clientId: service.demo.client_id, environment: 'sandbox', scopes: [...SCOPES] });
      const tail = startLop(service, ['events', 'tail', '--follow', '-n', '1', '--interval', '100'], { LOP_API_KEY: created.key });
      await tail.line((l) => l.startsWith('SEQ'));
      const cursor = await nextCursor();
      await revokeKey(connection.db, created.key_id);
      const ended = await tail.exited;
      expect(ended.code).toBe(1);
      expect(ended.stderr).toContain(`resume from cursor ${cursor}: lop events tail --follow --from-cursor ${cursor}\n`);
      expect(ended.stderr).toMatch(/error: unauthorized: /);
    } finally {
      await connection.close();
    }
  });
});
