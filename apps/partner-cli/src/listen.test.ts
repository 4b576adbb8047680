import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryHeaders } from '@lop/domain';
import { rawArrayElements } from './raw-json';
import { jsonLines, lop, REPO_ROOT, startLop, startReceiver, startService, type ReceivedDelivery, type TestService } from './testing/harness';

/**
 * `lop listen` against the real API: what a handler receives must be what the service's delivery
 * worker would send for the same event, checked with the verification sample partners copy from
 * docs/webhooks.md.
 */

type VerifyWebhook = (secret: string, headers: Record<string, string | undefined>, rawBody: string, now?: number) => { event_id: string; type: string };
let verifyWebhook: VerifyWebhook;
let service: TestService;

beforeAll(async () => {
  // The documented sample itself (docs/webhooks.md is generated from this file), loaded by path:
  // the tools project is not a dependency of the CLI.
  ({ verifyWebhook } = await import(pathToFileURL(join(REPO_ROOT, 'tools/examples/webhooks/verify-webhook.ts')).href));
  service = await startService();
});
afterAll(async () => {
  await service?.close();
});

/** The stream after `cursor`, each event as the API's response text has it. */
async function streamAfter(cursor: string): Promise<{ raws: string[]; nextCursor: string }> {
  const page = await service.get(`/v1/events?cursor=${cursor}&limit=500`);
  expect(page.status).toBe(200);
  expect(page.body.data.has_more).toBe(false);
  return { raws: rawArrayElements(page.text, ['data', 'events']), nextCursor: page.body.data.next_cursor };
}

const header = (request: ReceivedDelivery, name: string) => request.headers[name] as string | undefined;
const flatHeaders = (request: ReceivedDelivery) => Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]));

describe('lop listen forwards the stream to a local handler as signed deliveries', () => {
  it('delivers every event of `lop trigger corrected_result` once, in stream order, verified by the documented sample, body byte for byte the stream object', async () => {
    const receiver = await startReceiver(() => 204);
    const listener = startLop(service, ['listen', '--forward-to', receiver.url, '--interval', '100', '--json']);
    try {
      const ready = JSON.parse(await listener.line((l) => l.includes('"kind":"ready"')));
      expect(ready).toMatchObject({ environment: 'sandbox', forward_to: receiver.url, events: 'all' });
      expect(ready.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

      const triggered = await lop(service, ['trigger', 'corrected_result', '--json']);
      expect(triggered.code, triggered.stderr).toBe(0);
      const report = JSON.parse(triggered.stdout);
      expect(report).toMatchObject({ created: true, fixture: 'minimal', scenario: 'corrected_result', steps_remaining: 0, lifecycle: 'completed', lifecycle_detail: 'corrected_results' });
      expect(report.events).toContain('result.corrected');

      // The stream is complete once trigger has answered; stop after the last event is reported delivered.
      const stream = await streamAfter(ready.cursor);
      expect(stream.raws).toHaveLength(report.events.length);
      const lastEventId = JSON.parse(stream.raws.at(-1)!).event_id;
      await listener.line((l) => l.includes(lastEventId) && l.includes('"outcome":"delivered"'));
      const stopped = await listener.interrupt();
      expect(stopped.code, stopped.stderr).toBe(0);
      const stoppedLine = jsonLines(stopped.stdout).find((l) => l.kind === 'stopped');

      // Exactly the stream after the starting cursor, in order, each once, the same bytes.
      const requests = receiver.requests;
      expect(requests.map((r) => r.rawBody)).toEqual(stream.raws);
      expect(new Set(requests.map((r) => header(r, 'x-partner-event-id'))).size).toBe(requests.length);
      expect(stoppedLine).toMatchObject({ cursor: stream.nextCursor, delivered: requests.length, failed: 0 });

      const received = requests.map((request) => verifyWebhook(ready.secret, flatHeaders(request), request.rawBody));
      expect(received.map((event) => event.type)).toEqual(report.events);
      for (const [i, request] of requests.entries()) {
        expect(header(request, 'x-partner-event-id')).toBe(received[i].event_id);
        // The header set of the service's own signer (libs/domain webhooks/signature.ts), no more and no fewer.
        const signerHeaders = deliveryHeaders({ secret: 'x', body: request.rawBody, timestamp: 1, deliveryId: 'd', eventId: received[i].event_id });
        for (const [name, value] of Object.entries(signerHeaders)) {
          if (!['x-partner-signature', 'x-partner-timestamp', 'x-partner-delivery-id'].includes(name)) expect(header(request, name)).toBe(value);
        }
        expect(Object.keys(request.headers).filter((name) => !['host', 'content-length', 'connection'].includes(name)).sort()).toEqual(Object.keys(signerHeaders).sort());
        expect(Math.abs(Number(header(request, 'x-partner-timestamp')) - request.receivedAt / 1000)).toBeLessThan(5);
      }
      // Another secret does not verify: the signature really is over these bytes with the printed secret.
      expect(() => verifyWebhook('whsec_other', flatHeaders(requests[0]), requests[0].rawBody)).toThrow('signature mismatch');
    } finally {
      listener.child.kill('SIGKILL');
      await receiver.close();
    }
  });

  it('Ctrl-C prints the cursor after the last settled event; resuming from it delivers the rest and repeats nothing settled', async () => {
    const before = JSON.parse((await lop(service, ['events', 'tail', '--json', '-n', '1'])).stdout).next_cursor as string;
    const triggered = await lop(service, ['trigger', 'happy_path', '--json']);
    expect(triggered.code, triggered.stderr).toBe(0);
    const stream = await streamAfter(before);
    expect(stream.raws.length).toBeGreaterThan(6);

    // A slow handler, so Ctrl-C lands in the middle of the backlog, with a delivery in flight.
    const receiver = await startReceiver(() => new Promise((resolve) => setTimeout(() => resolve(200), 150)));
    try {
      const first = startLop(service, ['listen', '--forward-to', receiver.url, '--from-cursor', before, '--interval', '100', '--json']);
      await first.line((l) => l.includes('"kind":"ready"'));
      await receiver.until((requests) => requests.length >= 4);
      const firstRun = await first.interrupt();
      expect(firstRun.code, firstRun.stderr).toBe(0);
      const firstLines = jsonLines(firstRun.stdout);
      const firstDelivered = firstLines.filter((l) => l.kind === 'delivery' && l.outcome === 'delivered').map((l) => l.event_id);
      const { cursor } = firstLines.find((l) => l.kind === 'stopped');
      expect(firstDelivered.length).toBeGreaterThanOrEqual(3);
      expect(firstDelivered.length).toBeLessThan(stream.raws.length);
      // The printed cursor is exactly after the last delivered event.
      expect((await streamAfter(cursor)).raws).toEqual(stream.raws.slice(firstDelivered.length));

      const second = startLop(service, ['listen', '--forward-to', receiver.url, '--from-cursor', cursor, '--interval', '100', '--json']);
      await second.line((l) => l.includes('"kind":"ready"'));
      const eventIds = stream.raws.map((raw) => JSON.parse(raw).event_id as string);
      await second.line((l) => l.includes(eventIds.at(-1)!) && l.includes('"outcome":"delivered"'));
      const secondRun = await second.interrupt();
      expect(secondRun.code, secondRun.stderr).toBe(0);
      const secondDelivered = jsonLines(secondRun.stdout)
        .filter((l) => l.kind === 'delivery' && l.outcome === 'delivered')
        .map((l) => l.event_id);

      expect([...firstDelivered, ...secondDelivered]).toEqual(eventIds);
      expect(jsonLines(secondRun.stdout).find((l) => l.kind === 'stopped').cursor).toBe(stream.nextCursor);
    } finally {
      await receiver.close();
    }
  });

  it('a handler answering 500 is retried with backoff and reported; one that never recovers is reported failed and the exit code says so', async () => {
    const before = JSON.parse((await lop(service, ['events', 'tail', '--json', '-n', '1'])).stdout).next_cursor as string;
    const triggered = await lop(service, ['trigger', 'happy_path', '--json']);
    expect(triggered.code, triggered.stderr).toBe(0);
    const events = (await streamAfter(before)).raws.map((raw) => JSON.parse(raw));
    const [created, second] = events;
    expect(created.type).toBe('order.created');
    expect(events.length).toBeGreaterThan(2);

    // order.created fails twice then succeeds; the next event always fails; the rest are fine.
    const receiver = await startReceiver((request, all) => {
      const id = request.headers['x-partner-event-id'];
      if (id === created.event_id) return all.filter((r) => r.headers['x-partner-event-id'] === id).length <= 2 ? 500 : 200;
      return id === second.event_id ? 500 : 200;
    });
    try {
      const listener = startLop(service, ['listen', '--forward-to', receiver.url, '--from-cursor', before, '--max-attempts', '3', '--interval', '100']);
      await listener.line((l) => l.includes(`#${events.at(-1).sequence} `) && l.includes('→ 200'));
      const run = await listener.interrupt();
      expect(run.code).toBe(1);
      const lines = run.stdout.split('\n');
      const about = (event: { sequence: number }) => lines.filter((l) => /^\d\d:\d\d:\d\d\.\d{3} /.test(l) && l.includes(` #${event.sequence} `));
      expect(about(created)).toEqual([
        expect.stringMatching(/order\.created .* → 500 .*retrying in 0\.5 s \(attempt 1 of 3\)/),
        expect.stringMatching(/order\.created .* → 500 .*retrying in 1 s \(attempt 2 of 3\)/),
        expect.stringMatching(/order\.created .* → 200 {2}\d+ ms$/),
      ]);
      expect(about(second)).toEqual([
        expect.stringMatching(/ → 500 .*retrying in 0\.5 s \(attempt 1 of 3\)/),
        expect.stringMatching(/ → 500 .*retrying in 1 s \(attempt 2 of 3\)/),
        expect.stringMatching(/ → 500 .*failed after 3 attempts/),
      ]);
      for (const event of events.slice(2)) expect(about(event)).toEqual([expect.stringMatching(/ → 200 {2}\d+ ms$/)]);
      // Each line names the event id, what lop events resend takes, and its order.
      for (const event of events) for (const line of about(event)) expect(line).toContain(`event ${event.event_id}  order ${event.data.order_id}  → `);
      expect(run.stdout).toContain(`Stopped: ${events.length - 1} delivered, 1 failed.`);
      expect(run.stdout).toContain(`failed: #${second.sequence} ${second.type} ${second.event_id} (500)`);

      // Each attempt is a new delivery id with the same bytes, and the waits grew.
      const attemptsOf = (id: string) => receiver.requests.filter((r) => r.headers['x-partner-event-id'] === id);
      for (const id of [created.event_id, second.event_id]) {
        const attempts = attemptsOf(id);
        expect(attempts).toHaveLength(3);
        expect(new Set(attempts.map((r) => r.headers['x-partner-delivery-id'])).size).toBe(3);
        expect(new Set(attempts.map((r) => r.rawBody)).size).toBe(1);
        expect(attempts[1].receivedAt - attempts[0].receivedAt).toBeGreaterThanOrEqual(450);
        expect(attempts[2].receivedAt - attempts[1].receivedAt).toBeGreaterThanOrEqual(950);
      }
    } finally {
      await receiver.close();
    }
  });

  it('--events forwards only the types asked for; the others are passed over and counted, and the cursor still moves past them', async () => {
    const before = JSON.parse((await lop(service, ['events', 'tail', '--json', '-n', '1'])).stdout).next_cursor as string;
    const triggered = await lop(service, ['trigger', 'corrected_result', '--json']);
    expect(triggered.code, triggered.stderr).toBe(0);
    const stream = await streamAfter(before);
    const events = stream.raws.map((raw) => JSON.parse(raw));
    const wanted = events.filter((e) => e.type === 'result.final' || e.type === 'result.corrected');
    expect(wanted.map((e) => e.type)).toEqual(['result.final', 'result.corrected']);

    const receiver = await startReceiver();
    try {
      const listener = startLop(service, ['listen', '--forward-to', receiver.url, '--from-cursor', before, '--events', 'result.final,result.corrected', '--interval', '100', '--json']);
      await listener.line((l) => l.includes(wanted[1].event_id) && l.includes('"outcome":"delivered"'));
      const run = await listener.interrupt();
      expect(run.code, run.stderr).toBe(0);
      expect(receiver.requests.map((r) => r.rawBody)).toEqual(wanted.map((e) => stream.raws[events.indexOf(e)]));
      const lines = jsonLines(run.stdout);
      expect(lines[0]).toMatchObject({ kind: 'ready', events: ['result.final', 'result.corrected'] });
      expect(lines.at(-1)).toMatchObject({ kind: 'stopped', delivered: 2, failed: 0, not_matching: events.length - 2, cursor: stream.nextCursor });
    } finally {
      await receiver.close();
    }
  });

  it('a production key is refused unless --allow-production, and lop trigger never creates an order with one', async () => {
    const receiver = await startReceiver();
    try {
      const refused = await lop(service, ['listen', '--forward-to', receiver.url], { LOP_API_KEY: service.productionKey });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/production_key_refused: .*--allow-production/);
      expect(refused.stdout).toBe('');

      const allowed = startLop(service, ['listen', '--forward-to', receiver.url, '--allow-production', '--json'], { LOP_API_KEY: service.productionKey });
      expect(JSON.parse(await allowed.line((l) => l.includes('"kind":"ready"')))).toMatchObject({ environment: 'production' });
      expect((await allowed.interrupt()).code).toBe(0);

      const trigger = await lop(service, ['trigger', 'happy_path'], { LOP_API_KEY: service.productionKey });
      expect(trigger.code).toBe(2);
      expect(trigger.stderr).toMatch(/production_key_refused: .*sandbox keys only/);
      // Nothing reached the production stream.
      const stream = await service.get('/v1/events', service.productionKey);
      expect(stream.body.data.events).toEqual([]);
      expect(receiver.requests).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
