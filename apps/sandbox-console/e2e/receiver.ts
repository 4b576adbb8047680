import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Receiver {
  url: string;
  /** Event types received, in arrival order (one per attempt). */
  received: string[];
  close(): Promise<void>;
}

/**
 * A partner's webhook endpoint on loopback, answering by event type so every delivery outcome
 * shows up: 410 (permanent: a dead letter at once) for specimen.updated, 503 then 200 for
 * result.final (a retry), 200 for everything else.
 */
export async function startReceiver(): Promise<Receiver> {
  const received: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const type = (JSON.parse(body) as { type?: string }).type ?? 'unknown';
      received.push(type);
      const status = type === 'specimen.updated' ? 410 : type === 'result.final' && received.filter((t) => t === type).length === 1 ? 503 : 200;
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
