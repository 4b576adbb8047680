import { createServer, type AddressInfo } from 'node:net';

/**
 * A port nobody listens on right now, on `host` (loopback by default): for a server whose own
 * address must be known before it starts (its configured origin, a child process's PORT).
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
