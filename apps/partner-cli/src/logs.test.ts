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
    // (An empty log at start is said first.)
    expect(stopped.stderr).toMatch(/^(no logged request yet; waiting for new ones\n)?cursor: ([A-Za-z0-9_-]{32})\nresume with: lop logs tail --after \2 --json\n$/);
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

  it('--route: a template the API does not have is refused at start (exit 2) listing the templates; one with no request yet says so on stderr', async () => {
    const unknown = await lop(service, ['logs', 'tail', '--no-follow', '--route', '/v1/order/{orderId}']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown_route: --route \/v1\/order\/\{orderId\} is not a route template of the API .*one of: .*\/v1\/orders\/\{orderId\}/);
    // A concrete path is not a template either: the log keeps templates only.
    const concrete = await lop(service, ['logs', 'tail', '--no-follow', '--route', `/v1/orders/${NO_ORDER}`]);
    expect(concrete.code).toBe(2);

    const none = await lop(service, ['logs', 'tail', '--no-follow', '--route', '/v1/sandbox/orders/{orderId}/simulate', '--status', '5xx']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/^no logged request matches --status 5xx --route '\/v1\/sandbox\/orders\/\{orderId\}\/simulate'\n/);
  });

  it('--source tells lop\'s own requests apart (by its User-Agent) and leaves them out; --method, --since, --key-prefix and --search are the service\'s filters', async () => {
    const since = new Date().toISOString();
    // A request of lop itself, and one of another client (the harness's fetch).
    const own = await lop(service, ['scenarios', '--json']);
    expect(own.code, own.stderr).toBe(0);
    const lab = await service.get('/v1/lab');
    expect(lab.status).toBe(200);
    const read = async (...filters: string[]) => {
      const args = ['logs', 'tail', '--no-follow', '--json', '-n', '200', '--since', since, ...filters];
      let run = await lop(service, args);
      // Logged a second or so after the response: read until the other client's request is there (it was made last).
      for (let tries = 0; run.code === 0 && !run.stdout.includes(lab.body.request_id) && filters.length === 0 && tries < 50; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        run = await lop(service, args);
      }
      expect(run.code, run.stderr).toBe(0);
      return run.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { request_id: string; source: string; route: string; method: string });
    };
    const all = await read();
    expect(all.find((e) => e.route === '/v1/sandbox/scenarios')).toMatchObject({ source: 'lop' });
    expect(all.find((e) => e.request_id === lab.body.request_id)).toMatchObject({ source: 'rest' });
    const withoutLop = await read('--source', 'rest,console');
    expect(withoutLop.map((e) => e.request_id)).toContain(lab.body.request_id);
    expect(withoutLop.some((e) => e.source === 'lop')).toBe(false);
    expect((await read('--source', 'lop')).every((e) => e.source === 'lop')).toBe(true);
    expect((await read('--method', 'POST,PUT')).some((e) => e.request_id === lab.body.request_id)).toBe(false);
    // The response envelope's request_id is kept in the stored body (the service's own text).
    expect((await read('--key-prefix', service.demo.sandbox_key.slice(0, 13), '--search', lab.body.request_id.toUpperCase())).map((e) => e.request_id)).toEqual([lab.body.request_id]);
    // The human line says where each came from.
    const line = await lop(service, ['logs', 'tail', '--no-follow', '-n', '200', '--since', since, '--source', 'lop']);
    expect(line.stdout).toMatch(/\/v1\/sandbox\/scenarios .* lop$/m);
  });

  it('refuses filters that cannot be: a source or method that is none, a key prefix that is not one (exit 2); a time the service refuses (exit 1)', async () => {
    for (const args of [
      ['--source', 'curl'],
      ['--source', 'rest,'],
      ['--method', 'get'],
      ['--key-prefix', 'lop_live_AbCd'],
    ]) {
      const bad = await lop(service, ['logs', 'tail', '--no-follow', ...args]);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.stderr).toContain(args[0]);
    }
    const since = await lop(service, ['logs', 'tail', '--no-follow', '--since', 'yesterday']);
    expect(since.code).toBe(1);
    expect(since.stderr).toMatch(/invalid_request/);
    expect(since.stderr).toMatch(/since/);
  });

  it('refuses what cannot run: a status class that is none (exit 2), another client\'s cursor (exit 2), a production key (exit 1)', async () => {
    const bad = await lop(service, ['logs', 'tail', '--no-follow', '--status', '1xx']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--status.*1xx/);
    const forged = await lop(service, ['logs', 'tail', '--no-follow', '--after', 'A'.repeat(32)]);
    expect(forged.code).toBe(2);
    expect(forged.stderr).toMatch(/--after was refused by the service/);
    // --json: the service's own envelope, not one rebuilt by lop.
    const forgedJson = await lop(service, ['logs', 'tail', '--no-follow', '--json', '--after', 'A'.repeat(32)]);
    expect(forgedJson.code).toBe(2);
    const direct = await service.get(`/v1/sandbox/request-log?after=${'A'.repeat(32)}`);
    expect(direct.status).toBe(400);
    expect(JSON.parse(forgedJson.stderr)).toEqual({ ...direct.body, request_id: expect.stringMatching(/^req_/) });
    const production = await lop(service, ['logs', 'tail', '--no-follow'], { LOP_API_KEY: service.productionKey });
    expect(production.code).toBe(1);
    expect(production.stderr).toMatch(/forbidden: The request log is kept for sandbox keys only/);
  });
});
