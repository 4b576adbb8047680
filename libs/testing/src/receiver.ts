import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a partner's endpoint saw: the raw bytes, before any parsing. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** Date.now() when the whole body had arrived. */
  receivedAt: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** Wait this long before answering (longer than the attempt timeout = a timeout). */
  delayMs?: number;
  /** The response body, text or raw bytes; the worker keeps its first 2 KB with the attempt. */
  body?: string | Buffer;
}

export type Responder = (request: ReceivedRequest, index: number) => Reply;

export interface Receiver {
  /** http://127.0.0.1:<port><path> */
  url(path?: string): string;
  requests: ReceivedRequest[];
  respond(responder: Responder): void;
  /** Resolves once `predicate` holds for the requests so far. */
  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs?: number, what?: string): Promise<ReceivedRequest[]>;
  connections(): number;
  close(): Promise<void>;
}

/** A real HTTP receiver on 127.0.0.1, as a partner would run one. */
export async function startReceiver(responder: Responder = () => ({ status: 200 })): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let current = responder;
  let connections = 0;
  const waiters = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() };
      const index = requests.push(received) - 1;
      for (const wake of waiters) wake();
      const reply = current(received, index);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status, reply.headers).end(reply.body ?? '{"receiver":"ok"}');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs).unref();
      else send();
    });
  });
  server.on('connection', () => connections++);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path = '/hooks') => `http://127.0.0.1:${port}${path}`,
    requests,
    respond: (next) => (current = next),
    connections: () => connections,
    waitFor: (predicate, timeoutMs = 15_000, what = 'requests') =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(requests)) return;
          cleanup();
          resolve(requests);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received ${requests.length} request(s)`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The receiver's side of spec § Signature verification, written with node:crypto alone (not the
 * service's own signing code): HMAC-SHA256 over `timestamp.rawBody`, constant-time comparison,
 * and a timestamp within 300 seconds.
 */
export function verifyDelivery(secret: string, request: ReceivedRequest, nowSeconds = Math.floor(Date.now() / 1000)): boolean {
  const timestamp = String(request.headers['x-partner-timestamp'] ?? '');
  const signature = String(request.headers['x-partner-signature'] ?? '');
  if (!/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > 300) return false;
  const expected = Buffer.from(`v1=${createHmac('sha256', secret).update(`${timestamp}.${request.rawBody}`).digest('hex')}`);
  const presented = Buffer.from(signature);
  return expected.length === presented.length && timingSafeEqual(expected, presented);
}
