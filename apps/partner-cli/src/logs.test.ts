import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lop, startLop, startService, type TestService } from './testing/harness';

/** `lop logs tail` against the real API: the sandbox request log, followed. */

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service?.close();
});

const NO_ORDER = '00000000-0000-4000-8000-000000000000';

describe('lop logs tail', () => {
  it('follows the log: a request made while it runs is printed (--json, as the API returned it), and Ctrl-C prints the cursor', async () => {
    const tail = startLop(service, ['logs', 'tail', '--json', '-n', '1', '--interval', '100']);
    const lab = await service.get('/v1/lab');
    expect(lab.status).toBe(200);
    const line = await tail.line((l) => l.includes(lab.body.request_id));
    expect(JSON.parse(line)).toMatchObject({ request_id: lab.body.request_id, method: 'GET', route: '/v1/lab', status: 200, error_code: null, key_prefix: service.demo.sandbox_key.slice(0, 13), source: 'rest' });
    const stopped = await tail.interrupt();
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toMatch(/^cursor: [A-Za-z0-9_-]{32}\n$/);
    // The tail's own reads are not in the log.
    expect(stopped.stdout).not.toContain('/v1/sandbox/request-log');
  });

  it('--no-follow with filters prints one line per matching request, and --after resumes from a printed cursor', async () => {
    const missing = await service.get(`/v1/orders/${NO_ORDER}`);
    expect(missing.status).toBe(404);
    // Logged a second or so after the response: read until it is there.
    let once = await lop(service, ['logs', 'tail', '--no-follow', '--status', '4xx', '--route', '/v1/orders/{orderId}', '-n', '5']);
    for (let tries = 0; !once.stdout.includes(missing.body.request_id) && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      once = await lop(service, ['logs', 'tail', '--no-follow', '--status', '4xx', '--route', '/v1/orders/{orderId}', '-n', '5']);
    }
    expect(once.code, once.stderr).toBe(0);
    const line = once.stdout.split('\n').find((l) => l.includes(missing.body.request_id))!;
    expect(line).toMatch(/GET +\/v1\/orders\/\{orderId\} +404 +not_found +\d+ ms +req_\w+ +lop_test_\w{4} +rest$/);
    expect(once.stdout).not.toMatch(/ 200 /);
    const cursor = /^cursor: (\S+)$/m.exec(once.stderr)![1];
    const after = await lop(service, ['logs', 'tail', '--no-follow', '--json', '--after', cursor, '--status', '4xx', '--route', '/v1/orders/{orderId}']);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toBe('');
  });

  it('refuses what cannot run: a status class that is none (exit 2), another client\'s cursor (exit 2), a production key (exit 1)', async () => {
    const bad = await lop(service, ['logs', 'tail', '--no-follow', '--status', '1xx']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--status.*1xx/);
    const forged = await lop(service, ['logs', 'tail', '--no-follow', '--after', 'A'.repeat(32)]);
    expect(forged.code).toBe(2);
    expect(forged.stderr).toMatch(/--after was refused by the service/);
    const production = await lop(service, ['logs', 'tail', '--no-follow'], { LOP_API_KEY: service.productionKey });
    expect(production.code).toBe(1);
    expect(production.stderr).toMatch(/forbidden: The request log is kept for sandbox keys only/);
  });
});
