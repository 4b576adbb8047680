import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@lop/db';
import { rawArrayElements } from './raw-json';
import { jsonLines, lop, REPO_ROOT, startLop, startReceiver, startService, TEST_CONFIG_HOME, type ReceivedDelivery, type TestService } from './testing/harness';

/**
 * `lop` in a partner's first week: a handler fixed after a failure gets the one event again, the
 * signing secret it was configured with survives a restart of the listener, the listener waits
 * for a service that is still starting, and a cursor the service refuses is a usage error.
 */

type VerifyWebhook = (secret: string, headers: Record<string, string | undefined>, rawBody: string, now?: number) => { event_id: string; type: string };
let verifyWebhook: VerifyWebhook;
let service: TestService;

beforeAll(async () => {
  ({ verifyWebhook } = await import(pathToFileURL(join(REPO_ROOT, 'tools/examples/webhooks/verify-webhook.ts')).href));
  service = await startService();
});
afterAll(async () => {
  await service?.close();
});

const flatHeaders = (request: ReceivedDelivery) => Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]));

async function headCursor(): Promise<string> {
  const tail = await lop(service, ['events', 'tail', '--json', '-n', '1']);
  expect(tail.code, tail.stderr).toBe(0);
  return JSON.parse(tail.stdout).next_cursor as string;
}

describe('lop listen keeps one signing secret per forward URL', () => {
  it('a second run to the same URL signs with the same secret; another URL gets its own; the file is 0600; --secret sets it; "Resume with" runs as printed', async () => {
    const receiver = await startReceiver();
    const other = await startReceiver();
    try {
      const ready = async (args: string[]) => {
        const run = startLop(service, ['listen', '--interval', '100', '--json', ...args]);
        const line = JSON.parse(await run.line((l) => l.includes('"kind":"ready"')));
        const stopped = await run.interrupt();
        expect(stopped.code, stopped.stderr).toBe(0);
        return line.secret as string;
      };
      const first = await ready(['--forward-to', receiver.url]);
      expect(first).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
      expect(await ready(['--forward-to', receiver.url])).toBe(first);
      const otherSecret = await ready(['--forward-to', other.url]);
      expect(otherSecret).not.toBe(first);

      const file = join(TEST_CONFIG_HOME, 'lop', 'forward-secrets.json');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(join(TEST_CONFIG_HOME, 'lop')).mode & 0o777).toBe(0o700);
      // Kept under the URL with the loopback spelled localhost (one key for localhost, 127.0.0.1 and [::1]).
      const keyOf = (url: string) => url.replace('127.0.0.1', 'localhost');
      expect(JSON.parse(readFileSync(file, 'utf8')).secrets).toMatchObject({ [keyOf(receiver.url)]: first, [keyOf(other.url)]: otherSecret });

      // --secret overrides, and is what the next run (and the printed hint) uses.
      const chosen = 'whsec_chosen-by-the-partner';
      expect(await ready(['--forward-to', receiver.url, '--secret', chosen])).toBe(chosen);
      expect(await ready(['--forward-to', receiver.url])).toBe(chosen);

      // The hint, run exactly as printed, resumes with the same secret: a delivery it makes verifies.
      const human = startLop(service, ['listen', '--forward-to', receiver.url, '--interval', '100']);
      await human.line((l) => l.startsWith('Ready.'));
      const stopped = await human.interrupt();
      const hint = stopped.stdout.split('\n').find((l) => l.startsWith('Resume with: '))!;
      expect(hint).toBeDefined();
      expect(hint).not.toContain('…');
      const args = hint.replace('Resume with: lop ', '').split(' ');
      const resumed = startLop(service, [...args, '--interval', '100', '--json']);
      const resumedReady = JSON.parse(await resumed.line((l) => l.includes('"kind":"ready"')));
      expect(resumedReady.secret).toBe(chosen);
      const triggered = await lop(service, ['trigger', 'happy_path', '--json']);
      expect(triggered.code, triggered.stderr).toBe(0);
      await receiver.until((requests) => requests.length >= 1);
      expect((await resumed.interrupt()).code).toBe(0);
      expect(verifyWebhook(chosen, flatHeaders(receiver.requests[0]), receiver.requests[0].rawBody).type).toBe('order.created');
    } finally {
      await receiver.close();
      await other.close();
    }
  });
});

describe('several lop listens started at once', () => {
  it('four listens to four new URLs at the same moment: each printed secret is the one kept for its URL', async () => {
    const receivers = await Promise.all([1, 2, 3, 4].map(() => startReceiver()));
    const listens = receivers.map((receiver) => startLop(service, ['listen', '--forward-to', receiver.url.replace('/hooks', '/at-once'), '--interval', '100', '--json']));
    try {
      const printed = await Promise.all(listens.map(async (listen) => JSON.parse(await listen.line((l) => l.includes('"kind":"ready"'))).secret as string));
      for (const listen of listens) expect((await listen.interrupt()).code).toBe(0);
      const kept = JSON.parse(readFileSync(join(TEST_CONFIG_HOME, 'lop', 'forward-secrets.json'), 'utf8')).secrets;
      for (const [i, receiver] of receivers.entries()) expect(kept[receiver.url.replace('127.0.0.1', 'localhost').replace('/hooks', '/at-once')]).toBe(printed[i]);
      expect(new Set(printed).size).toBe(4);
    } finally {
      for (const listen of listens) listen.child.kill('SIGKILL');
      await Promise.all(receivers.map((receiver) => receiver.close()));
    }
  });
});

describe('lop events resend <event_id>', () => {
  it('delivers that one event again, byte for byte the stream object, signed with the URL’s kept secret; exit 0', async () => {
    const before = await headCursor();
    const triggered = await lop(service, ['trigger', 'happy_path', '--json']);
    expect(triggered.code, triggered.stderr).toBe(0);
    const page = await service.get(`/v1/events?cursor=${before}&limit=500`);
    const raws = rawArrayElements(page.text, ['data', 'events']);
    const target = raws[1];
    const event = JSON.parse(target);

    const receiver = await startReceiver();
    try {
      const listened = startLop(service, ['listen', '--forward-to', receiver.url, '--interval', '100', '--json']);
      const secret = JSON.parse(await listened.line((l) => l.includes('"kind":"ready"'))).secret as string;
      await listened.interrupt();

      const resent = await lop(service, ['events', 'resend', event.event_id, '--forward-to', receiver.url, '--json']);
      expect(resent.code, resent.stderr).toBe(0);
      expect(jsonLines(resent.stdout)).toEqual([expect.objectContaining({ kind: 'delivery', event_id: event.event_id, sequence: event.sequence, outcome: 'delivered', attempt: 1 })]);
      expect(receiver.requests).toHaveLength(1);
      expect(receiver.requests[0].rawBody).toBe(target);
      expect(receiver.requests[0].headers['x-partner-event-id']).toBe(event.event_id);
      expect(verifyWebhook(secret, flatHeaders(receiver.requests[0]), receiver.requests[0].rawBody).event_id).toBe(event.event_id);
    } finally {
      await receiver.close();
    }
  });

  it('a handler still failing is retried and reported (exit 1); an event not in the stream is exit 1; a malformed id is exit 2', async () => {
    const before = await headCursor();
    expect((await lop(service, ['trigger', 'happy_path', '--json'])).code).toBe(0);
    const event = JSON.parse(rawArrayElements((await service.get(`/v1/events?cursor=${before}&limit=500`)).text, ['data', 'events'])[0]);
    const receiver = await startReceiver(() => 503);
    try {
      // This handler's secret is given: nothing is kept for its URL (no listen to it).
      const failed = await lop(service, ['events', 'resend', event.event_id, '--forward-to', receiver.url, '--secret', 'whsec_handler', '--max-attempts', '2']);
      expect(failed.code).toBe(1);
      expect(failed.stdout).toMatch(/→ 503 .*retrying in 0\.5 s \(attempt 1 of 2\)/);
      expect(failed.stdout).toMatch(/→ 503 .*failed after 2 attempts/);
      expect(receiver.requests).toHaveLength(2);

      const missing = await lop(service, ['events', 'resend', '00000000-0000-4000-8000-000000000000', '--forward-to', receiver.url, '--secret', 'whsec_handler']);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/not_found: no event 00000000-0000-4000-8000-000000000000/);
      const malformed = await lop(service, ['events', 'resend', 'evt-1', '--forward-to', receiver.url]);
      expect(malformed.code).toBe(2);
      expect(receiver.requests).toHaveLength(2);
    } finally {
      await receiver.close();
    }
  });
});

describe('lop events resend with no kept secret, and URL spellings', () => {
  it('refuses (exit 2) naming --secret when nothing is kept for the URL, keeps nothing and sends nothing; with --secret it delivers', async () => {
    const before = await headCursor();
    expect((await lop(service, ['trigger', 'happy_path', '--steps', '1', '--json'])).code).toBe(0);
    const event = JSON.parse(rawArrayElements((await service.get(`/v1/events?cursor=${before}&limit=500`)).text, ['data', 'events'])[0]);
    const receiver = await startReceiver();
    try {
      const file = join(TEST_CONFIG_HOME, 'lop', 'forward-secrets.json');
      const keptBefore = readFileSync(file, 'utf8');
      const url = receiver.url.replace('/hooks', '/never-listened');
      const refused = await lop(service, ['events', 'resend', event.event_id, '--forward-to', url]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/no_kept_secret: no signing secret is kept for http:\/\/localhost:\d+\/never-listened: pass the one your handler verifies with, --secret whsec_…/);
      expect(receiver.requests).toEqual([]);
      expect(readFileSync(file, 'utf8')).toBe(keptBefore);

      const given = await lop(service, ['events', 'resend', event.event_id, '--forward-to', url, '--secret', 'whsec_the-handlers-own']);
      expect(given.code, given.stderr).toBe(0);
      expect(verifyWebhook('whsec_the-handlers-own', flatHeaders(receiver.requests[0]), receiver.requests[0].rawBody).event_id).toBe(event.event_id);
    } finally {
      await receiver.close();
    }
  });

  it('localhost, 127.0.0.1 and a trailing slash are one URL: a resend to another spelling signs with the secret the listen printed', async () => {
    const before = await headCursor();
    expect((await lop(service, ['trigger', 'happy_path', '--steps', '1', '--json'])).code).toBe(0);
    const event = JSON.parse(rawArrayElements((await service.get(`/v1/events?cursor=${before}&limit=500`)).text, ['data', 'events'])[0]);
    const receiver = await startReceiver();
    try {
      const listened = startLop(service, ['listen', '--forward-to', receiver.url.replace('/hooks', '/spelled'), '--interval', '100', '--json']);
      const secret = JSON.parse(await listened.line((l) => l.includes('"kind":"ready"'))).secret as string;
      await listened.interrupt();
      const respelled = receiver.url.replace('127.0.0.1', 'LOCALHOST').replace('/hooks', '/spelled/');
      const resent = await lop(service, ['events', 'resend', event.event_id, '--forward-to', respelled, '--json']);
      expect(resent.code, resent.stderr).toBe(0);
      expect(verifyWebhook(secret, flatHeaders(receiver.requests[0]), receiver.requests[0].rawBody).event_id).toBe(event.event_id);
    } finally {
      await receiver.close();
    }
  });
});

describe('an HTTPS handler with a self-signed certificate', () => {
  let dir: string;
  let server: HttpsServer;
  let url: string;
  const received: string[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lop-self-signed-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
    server = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
      received.push(String(req.headers['x-partner-event-id']));
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails once (not retried) with the certificate error and a hint naming --skip-verify; with --skip-verify it is delivered, with a warning', async () => {
    const before = await headCursor();
    expect((await lop(service, ['trigger', 'happy_path', '--steps', '1', '--json'])).code).toBe(0);
    const event = JSON.parse(rawArrayElements((await service.get(`/v1/events?cursor=${before}&limit=500`)).text, ['data', 'events'])[0]);

    const refused = await lop(service, ['events', 'resend', event.event_id, '--forward-to', url, '--secret', 'whsec_tls', '--max-attempts', '3']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/→ DEPTH_ZERO_SELF_SIGNED_CERT .*failed after 1 attempt$/m);
    expect(refused.stderr).toContain('is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT): for a local handler with a self-signed certificate, pass --skip-verify');
    expect(received).toEqual([]);

    const listener = startLop(service, ['listen', '--forward-to', url, '--from-cursor', before, '--skip-verify', '--interval', '100']);
    await listener.line((l) => l.includes(event.event_id) && l.includes('→ 204'));
    const stopped = await listener.interrupt();
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stderr).toMatch(/warning: --skip-verify: the certificate of 127\.0\.0\.1:\d+ is not checked/);
    expect(stopped.stdout).toContain('--skip-verify');
    expect(received[0]).toBe(event.event_id);
  });
});

describe('lop listen at start', () => {
  it('waits for a service that is not up yet, then becomes ready', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}/api/public/partner`;
    const receiver = await startReceiver();
    const listener = startLop(service, ['listen', '--forward-to', receiver.url, '--interval', '100', '--json'], { LOP_BASE_URL: base });
    let proxy: TcpServer | undefined;
    try {
      await listener.line((l) => l.includes('"kind":"stream_error"'));
      expect(listener.child.exitCode).toBeNull();
      // The service "starts": a TCP relay on that port to the running API.
      const target = new URL(service.baseUrl);
      proxy = createTcpServer((socket) => {
        const upstream = connect(Number(target.port), target.hostname);
        socket.pipe(upstream).pipe(socket);
        socket.on('error', () => upstream.destroy());
        upstream.on('error', () => socket.destroy());
      });
      await new Promise<void>((resolve) => proxy!.listen(port, '127.0.0.1', resolve));
      expect(JSON.parse(await listener.line((l) => l.includes('"kind":"ready"'), 30_000))).toMatchObject({ environment: 'sandbox' });
      expect((await listener.interrupt()).code).toBe(0);
    } finally {
      listener.child.kill('SIGKILL');
      proxy?.close();
      await receiver.close();
    }
  });

  it('a cursor the service refuses is a usage error (exit 2) naming its issue: an old seq:N cursor, another stream’s, and on events tail too', async () => {
    const receiver = await startReceiver();
    try {
      const legacy = Buffer.from('seq:3').toString('base64url');
      const refused = await lop(service, ['listen', '--forward-to', receiver.url, '--from-cursor', legacy]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/cursor_format_retired: --from-cursor was refused by the service/);
      expect(refused.stdout).toBe('');

      const productionCursor = (await service.get('/v1/events', service.productionKey)).body.data.next_cursor as string;
      const another = await lop(service, ['listen', '--forward-to', receiver.url, '--from-cursor', productionCursor]);
      expect(another.code).toBe(2);
      expect(another.stderr).toMatch(/cursor_of_another_stream/);

      const tail = await lop(service, ['events', 'tail', '--from-cursor', legacy]);
      expect(tail.code).toBe(2);
      expect(tail.stderr).toMatch(/cursor_format_retired/);

      // --json: the service's own envelope, as it answered (its code, details and request_id), not one rebuilt by lop.
      const direct = await service.get(`/v1/events?cursor=${legacy}&limit=1`);
      for (const args of [['listen', '--forward-to', receiver.url], ['events', 'tail']]) {
        const json = await lop(service, [...args, '--from-cursor', legacy, '--json']);
        expect(json.code).toBe(2);
        const envelope = JSON.parse(json.stderr);
        expect(envelope).toEqual({ ...direct.body, request_id: expect.stringMatching(/^req_/) });
        expect(envelope.request_id).not.toBe(direct.body.request_id);
      }
      expect(receiver.requests).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
