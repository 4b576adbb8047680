import type { Server } from 'node:http';
import { request } from 'node:http';
import { Writable } from 'node:stream';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../main';
import { accessLog } from './access-log';
import { requestId } from './request-id';

/** The access log on a real express server on 127.0.0.1, read back from an in-memory pino stream. */
const lines: Record<string, any>[] = [];
let server: Server;
let origin: string;

beforeAll(async () => {
  const memory = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().trim().split('\n').map((line: string) => JSON.parse(line)));
      done();
    },
  });
  const app = express();
  app.use(requestId);
  app.use(accessLog(createLogger({ LOG_LEVEL: 'info' }, 'access-log-test', memory)));
  app.get('/livez', (_req, res) => void res.json({ status: 'ok' }));
  app.use('/mounted', express.Router().get('/thing', (_req, res) => void res.status(404).json({})));
  app.get('/boom', (_req, res) => void res.status(500).json({}));
  app.get('/hang', () => undefined);
  await new Promise<void>((resolve) => (server = app.listen(0, '127.0.0.1', () => resolve())));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const logged = async (requestIdHeader: string | null) => {
  for (let i = 0; i < 50 && !lines.some((l) => l.request_id === requestIdHeader); i++) await new Promise((r) => setTimeout(r, 10));
  return lines.filter((l) => l.request_id === requestIdHeader);
};

describe('access log', () => {
  it('one line per request: request_id, method, full path without the query string, status, duration', async () => {
    const response = await fetch(`${origin}/mounted/thing?api_key=secret-value`, { headers: { authorization: 'Bearer lop_sk_test_secret' } });
    const [line, ...more] = await logged(response.headers.get('x-request-id'));
    expect(more).toEqual([]);
    expect(line).toMatchObject({ level: 30, msg: 'request completed', req: { method: 'GET', path: '/mounted/thing' }, res: { status: 404 } });
    expect(line.responseTime).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(line)).not.toMatch(/secret/);
  });

  it('a 5xx is logged at error level', async () => {
    const response = await fetch(`${origin}/boom`);
    const [line] = await logged(response.headers.get('x-request-id'));
    expect(line).toMatchObject({ level: 50, msg: 'request failed', res: { status: 500 } });
  });

  it('a request the client abandons is logged as aborted, once, at info level with status 499', async () => {
    const before = lines.length;
    await new Promise<void>((resolve) => {
      const req = request(`${origin}/hang`);
      req.on('error', () => resolve());
      req.end(() => setTimeout(() => req.destroy(), 50));
    });
    for (let i = 0; i < 50 && lines.length === before; i++) await new Promise((r) => setTimeout(r, 10));
    const aborted = lines.slice(before);
    expect(aborted).toHaveLength(1);
    expect(aborted[0]).toMatchObject({ level: 30, msg: 'request aborted', req: { method: 'GET', path: '/hang' }, res: { status: 499 } });
    expect(aborted[0].request_id).toMatch(/^req_[0-9a-f]{24}$/);
  });

  it('health probes are not logged', async () => {
    const response = await fetch(`${origin}/livez`);
    await new Promise((r) => setTimeout(r, 50));
    expect(await logged(response.headers.get('x-request-id'))).toEqual([]);
  });
});
