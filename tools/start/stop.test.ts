import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { embeddedUrl, freePort } from '@lop/db';
import { demoId } from '@lop/domain';
import { admin, bannerOf, npmStart, processesOf, type Instance } from './testing';

/**
 * How each stop is asked for; every one is followed at once by the next start (npm exits without
 * waiting for the service, so the new instance overlaps the old one's drain).
 */
const STOPS: { name: string; signals: NodeJS.Signals[] }[] = [
  { name: 'SIGTERM', signals: ['SIGTERM'] },
  { name: 'SIGINT (Ctrl-C)', signals: ['SIGINT'] },
  { name: 'SIGTERM, then a second SIGTERM mid-drain', signals: ['SIGTERM', 'SIGTERM'] },
  { name: 'SIGINT, then SIGTERM mid-drain', signals: ['SIGINT', 'SIGTERM'] },
];

/** The receiver holds each delivery this long, so deliveries are mid-request at every stop. */
const RECEIVER_DELAY_MS = 3_000;

/**
 * A stopping instance's output that says a connection to its database was lost, or that its stop
 * went wrong. With LOG_LEVEL=debug the output carries PostgreSQL's own log, which has a FATAL
 * "terminating connection due to administrator command" for every client connection still open
 * when the server is stopped: with the database stopped last, there is none.
 */
const TROUBLE = [
  'terminating connection',
  '57P01',
  'database system is shutting down',
  'Connection terminated',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'ECONNREFUSED',
  'ECONNRESET',
  '"level":50',
  '"level":60',
];

const dataDir = mkdtempSync(join(tmpdir(), 'lop-stop-'));
chmodSync(dataDir, 0o755);
let receiver: Server | undefined;
const instances: Instance[] = [];
afterAll(() => {
  for (const pid of [...instances.map((instance) => -instance.npm.pid!), ...processesOf(dataDir).map((p) => p.pid)]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('stopping npm start', () => {
  it('drains its API and its worker before it stops its database, on SIGTERM, SIGINT and a second signal, with a restart overlapping the stop: no lost database connection, and every delivery in flight at the stop is finished and recorded', { timeout: 120_000 }, async () => {
    // Attempt ids (x-partner-delivery-id) whose request the receiver is holding.
    const holding = new Set<string>();
    receiver = createHttpServer((request, response) => {
      const attempt = String(request.headers['x-partner-delivery-id']);
      holding.add(attempt);
      request.resume();
      request.once('end', () => setTimeout(() => response.writeHead(200).end(() => holding.delete(attempt)), RECEIVER_DELAY_MS));
    });
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;

    const pgPort = await freePort();
    const env = {
      DATABASE_URL: '',
      PARTNER_DATA_DIR: dataDir,
      PARTNER_EMBEDDED_PG_PORT: String(pgPort),
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'debug',
      PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true',
      PARTNER_WEBHOOK_POLL_INTERVAL_SECONDS: '0.5',
      PARTNER_CREATE_ORDER_RATE_LIMIT: '100000',
    };
    const inFlightAtStop = new Set<string>();
    const trouble: string[] = [];
    const drained: Promise<void>[] = [];
    let current = npmStart(env);
    instances.push(current);
    for (const [round, stop] of STOPS.entries()) {
      const banner = await bannerOf(current);
      const apiBase = /API base URL\s+(\S+)/.exec(banner)![1];
      const key = /Sandbox key\s+(lop_test_[0-9A-Za-z]{32,})/.exec(banner)![1];
      if (round === 0) admin(env, 'webhooks', 'create', '--client', demoId('client'), '--environment', 'sandbox', '--url', receiverUrl, '--events', 'all');
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const subject = `stop-${round}-${randomBytes(3).toString('hex')}`;
      await fetch(`${apiBase}/subjects/${subject}`, { method: 'PUT', headers, body: '{}' }).then((response) => response.arrayBuffer());
      // Orders (each one an event, so a delivery) until the stop and through it: the API is
      // answering while it drains, and deliveries keep arriving at the worker.
      let ordering = true;
      const orders = (async () => {
        for (let i = 0; ordering; i++) {
          const id = `stop-${round}-${i}-${randomBytes(3).toString('hex')}`;
          await fetch(`${apiBase}/orders`, {
            method: 'POST',
            headers: { ...headers, 'idempotency-key': id },
            body: JSON.stringify({ external_order_id: id, program_id: demoId('program:wellness-sbx'), item_id: demoId('item:wellness-sbx:CBC'), external_subject_id: subject, collection: 'in_person_draw' }),
          }).then(
            (response) => response.arrayBuffer(),
            () => undefined, // refused once the API has stopped listening
          );
        }
      })();
      const deadline = Date.now() + 15_000;
      while (holding.size < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(holding.size, 'webhook deliveries in flight at the stop').toBeGreaterThan(0);
      for (const attempt of holding) inFlightAtStop.add(attempt);

      const stopping = current;
      process.kill(-stopping.npm.pid!, stop.signals[0]);
      if (stop.signals[1]) {
        // The service drains for seconds (the receiver holds its deliveries): still there to get it.
        await new Promise((resolve) => setTimeout(resolve, 500));
        process.kill(-stopping.npm.pid!, stop.signals[1]);
      }
      // On SIGTERM npm exits at once, without waiting for the service (on a lone SIGINT it waits):
      // the next instance starts now, as a process manager would start it, while this one drains.
      await stopping.exited;
      current = npmStart(env);
      instances.push(current);
      ordering = false;
      await orders;
      drained.push(
        stopping.closed.then(() => {
          const lines = stopping.output().split('\n');
          const lost = lines.filter((line) => TROUBLE.some((sign) => line.includes(sign)));
          if (lost.length > 0) trouble.push(`stop ${round} (${stop.name}):\n${lost.slice(0, 8).join('\n')}`);
        }),
      );
    }
    await Promise.all(drained);
    expect(trouble.join('\n\n')).toBe('');

    // Each attempt in flight at a stop was finished by the stopping worker and recorded as delivered.
    await bannerOf(current);
    const sql = postgres(embeddedUrl(pgPort), { max: 1, onnotice: () => undefined });
    try {
      const rows = await sql<{ id: string; outcome: string; state: string }[]>`
        select a.id, a.outcome, d.state from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
        where a.id = any(${[...inFlightAtStop]}::uuid[])`;
      const notDelivered = [...inFlightAtStop].filter((attempt) => rows.find((row) => row.id === attempt)?.outcome !== 'delivered');
      expect(notDelivered, JSON.stringify(rows.filter((row) => row.outcome !== 'delivered'))).toEqual([]);
    } finally {
      await sql.end();
    }
    process.kill(-current.npm.pid!, 'SIGTERM');
    await current.closed;
  });
});
