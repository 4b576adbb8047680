import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { PARTNER_BASE_PATH } from '@lop/contract';
import type { Logger } from 'pino';
import { connectDatabase, type DatabaseConnection } from '@lop/db';
import { loadConfig, protectorFor, type Config } from '@lop/domain';
import { testDatabaseUrl } from '@lop/testing';
import { createApp } from '../app';
import { createLogger, startPartnerApi } from '../main';

export interface TestResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined when the body is not JSON. */
  body: any;
  text: string;
}

export interface RequestOptions {
  /** API key text; sent as `Authorization: Bearer <key>`. */
  key?: string;
  /** Serialised as JSON with `Content-Type: application/json`. */
  json?: unknown;
  /** Sent as is (use with an explicit content-type header). */
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface TestApi {
  /** Origin, e.g. http://127.0.0.1:41234 */
  url: string;
  /** A partner call: `path` is below the base path, e.g. `/v1/health`. */
  call(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** A call to any path of the origin (unknown routes, the OpenAPI document). */
  fetch(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

async function send(origin: string, method: string, path: string, options: RequestOptions = {}): Promise<TestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.rawBody;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(origin + path, { method, headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

export function testApi(url: string, close: () => Promise<void>): TestApi {
  return {
    url,
    call: (method, path, options) => send(url, method, PARTNER_BASE_PATH + path, options),
    fetch: (method, path, options) => send(url, method, path, options),
    close,
  };
}

/**
 * The real partner API (startPartnerApi) on 127.0.0.1, port 0, against this run's database.
 * `env` adds configuration variables, e.g. PARTNER_SANDBOX_BASE_URL.
 */
export async function startTestApi(env: Record<string, string> = {}, databaseUrl = testDatabaseUrl()): Promise<TestApi> {
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', PARTNER_DB_POOL_SIZE: '4', ...env });
  const api = await startPartnerApi({ config, databaseUrl, logger: createLogger(config, 'partner-api-test') });
  return testApi(api.url, () => api.close());
}

/** Test configuration: port 0, silent, a small pool, and its own encryption key (never the data folder's). */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    PARTNER_DB_POOL_SIZE: '4',
    PARTNER_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    ...env,
  });
}

/** Log lines written by an app under test, parsed. */
export interface CapturedLog {
  lines: Record<string, any>[];
  text(): string;
}

/**
 * The express app built over a given connection (e.g. a closed pool or an unmigrated database)
 * with a logger whose output the test can read.
 */
export async function startAppOver(database: DatabaseConnection): Promise<TestApi & { log: CapturedLog }> {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      raw.push(String(chunk));
      done();
    },
  });
  // The service's own logger settings (redaction, error serializer), writing to memory.
  const logger: Logger = createLogger({ LOG_LEVEL: 'info' }, 'partner-api-test', stream);
  const config = testConfig();
  const app = createApp({ database, config, logger, protector: protectorFor(config) });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const log: CapturedLog = {
    get lines() {
      return raw.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line));
    },
    text: () => raw.join(''),
  };
  const api = testApi(`http://127.0.0.1:${port}`, async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await database.close().catch(() => undefined);
  });
  return { ...api, log };
}

export interface DatabaseProxy {
  /** The database URL through the proxy. */
  url: string;
  /** The database becomes unreachable: open connections drop, new ones are refused. */
  cut(): Promise<void>;
  /** Reachable again, on the same address (nothing to do when it was not cut). */
  restore(): Promise<void>;
  /**
   * The database stalls, as a SIGSTOPped server looks to its clients: connections (open and new)
   * stay up, bytes sent to it are accepted but nothing is answered.
   */
  freeze(): void;
  /** The stalled database resumes: everything held back is delivered, as after SIGCONT. */
  thaw(): void;
  close(): Promise<void>;
}

/** A TCP relay to the run's PostgreSQL, so a test can take the database away from a running API. */
export async function startDatabaseProxy(databaseUrl = testDatabaseUrl()): Promise<DatabaseProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  const pairs = new Set<[client: Socket, upstream: Socket]>();
  let server: TcpServer;
  let listening = false;
  let frozen = false;
  // Unpiped and paused, a socket leaves what arrives in the kernel's buffers: nothing is lost, nothing answered.
  const hold = ([client, upstream]: [Socket, Socket]) => {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  };
  const relay = ([client, upstream]: [Socket, Socket]) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = createTcpServer((client) => {
        const upstream = connect(Number(target.port || 5432), target.hostname);
        const pair: [Socket, Socket] = [client, upstream];
        const drop = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
          pairs.delete(pair);
        };
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', drop).on('close', drop);
        }
        pairs.add(pair);
        if (frozen) hold(pair);
        else relay(pair);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        listening = true;
        resolve((server.address() as AddressInfo).port);
      });
    });
  const cut = () =>
    new Promise<void>((resolve) => {
      if (!listening) return resolve();
      listening = false;
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  const port = await listen(0);
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    cut,
    restore: async () => {
      if (!listening) await listen(port);
    },
    freeze: () => {
      frozen = true;
      for (const pair of pairs) hold(pair);
    },
    thaw: () => {
      frozen = false;
      for (const pair of pairs) relay(pair);
    },
    close: () => {
      frozen = false;
      return cut();
    },
  };
}

/** A second connection for building fixtures and reading rows back. */
export function connectFixtures(databaseUrl = testDatabaseUrl()): DatabaseConnection {
  return connectDatabase(databaseUrl, { max: 2, applicationName: 'partner-api-test-fixtures' });
}
