import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Environment } from '@lop/contract';
import { BlockedDestinationError, systemResolver, vetDestination, type DestinationPolicy, type Resolver, type VettedDestination } from './destination-guard';
import type { AttemptResult } from './retry-policy';
import { deliveryHeaders } from './signature';

/**
 * One HTTP attempt of one delivery: vet the destination (fresh DNS), sign the exact bytes, POST
 * them to the vetted address with the original host name for SNI and Host, never follow a
 * redirect, and give up after the per-attempt timeout. From the answer the status code and
 * Retry-After decide what happens next; the first 2 KB of the body are kept, as bytes, for the
 * partner to read (sandbox console), the rest is discarded unread. `beforeSend` runs once the
 * request is signed and before it leaves: the caller records the attempt there.
 */

/** Milliseconds since the epoch; injectable so tests can move time. */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();

export interface AttemptRequest {
  url: string;
  environment: Environment;
  secret: string;
  /** The exact bytes to send and sign. */
  body: string;
  deliveryId: string;
  eventId: string;
  /** A test delivery: flagged as one (signature.ts, TEST_DELIVERY_HEADER). */
  test?: boolean;
  /**
   * Awaited after the destination is vetted and the request signed, before any byte is sent. If
   * it throws, nothing is sent and attemptDelivery rejects with that error.
   */
  beforeSend?: (sending: SendingAttempt) => Promise<void>;
}

/** What is known of an attempt just before its request leaves. */
export interface SendingAttempt {
  startedAt: Date;
  address: string;
  requestHeaders: Record<string, string>;
}

/** Thrown out of attemptDelivery when `beforeSend` failed: no request was made. */
export class AttemptNotStartedError extends Error {
  override name = 'AttemptNotStartedError';
}

export interface AttemptOptions extends DestinationPolicy {
  timeoutMs: number;
  resolve?: Resolver;
  clock?: Clock;
  /** Connection reuse per vetted address; see createDeliveryAgents. */
  agents?: DeliveryAgents;
  /** Aborts the attempt without a verdict (worker shutdown): the caller releases the job. */
  signal?: AbortSignal;
}

export interface AttemptReport {
  result: AttemptResult;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  /** The vetted address the request went to, when it got that far. */
  address: string | null;
  /** A short reason for operators (never the receiver's body). */
  detail: string | null;
  /** The headers sent (signature included, the secret never), once a request was made. */
  requestHeaders: Record<string, string> | null;
  /** The first RESPONSE_EXCERPT_BYTES of the receiver's body, as received, when it answered. */
  responseBody: Buffer | null;
  /** True when the receiver's body was longer than the excerpt. */
  responseBodyTruncated: boolean | null;
}

/** How much of a receiver's answer is kept: enough to read an error page's message. */
export const RESPONSE_EXCERPT_BYTES = 2048;

/**
 * How long, after the status line, the attempt waits for the excerpt of the body: the status
 * decides the outcome, so a receiver slow to send its body must not hold the attempt up.
 */
const EXCERPT_GRACE_MS = 250;

export class AttemptInterruptedError extends Error {
  override name = 'AttemptInterruptedError';
}

export interface DeliveryAgents {
  http: http.Agent;
  https: https.Agent;
  destroy(): void;
}

/**
 * Keep-alive agents. Their socket pools are keyed by the address connected to (always a vetted
 * IP here) and the TLS server name, so a reused socket always leads to an address that passed the
 * guard for that same name.
 */
export function createDeliveryAgents(tls: https.AgentOptions = {}): DeliveryAgents {
  const options = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64, scheduling: 'lifo' as const };
  const agents = { http: new http.Agent(options), https: new https.Agent({ ...options, ...tls }) };
  return { ...agents, destroy: () => (agents.http.destroy(), agents.https.destroy()) };
}

/** The most of a receiver's body ever read before the socket is dropped (read only to reuse it). */
const MAX_DISCARDED_BODY_BYTES = 64 * 1024;

/** A receiver that stops sending its (ignored) body loses the socket after this long. */
const DISCARD_IDLE_MS = 5_000;

class AttemptTimeout extends Error {}

export async function attemptDelivery(request: AttemptRequest, options: AttemptOptions): Promise<AttemptReport> {
  const clock = options.clock ?? systemClock;
  const startedAt = new Date(clock());
  const began = performance.now();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new AttemptTimeout()), options.timeoutMs);
  const onShutdown = () => controller.abort(new AttemptInterruptedError('the worker is shutting down'));
  options.signal?.addEventListener('abort', onShutdown, { once: true });
  let address: string | null = null;
  let requestHeaders: Record<string, string> | null = null;
  const report = (result: AttemptResult, statusCode: number | null, detail: string | null, excerpt?: { bytes: Buffer; truncated: boolean }): AttemptReport => ({
    result,
    startedAt,
    durationMs: Math.round(performance.now() - began),
    statusCode,
    address,
    detail,
    requestHeaders,
    responseBody: excerpt?.bytes ?? null,
    responseBodyTruncated: excerpt?.truncated ?? null,
  });
  try {
    if (options.signal?.aborted) throw new AttemptInterruptedError('the worker is shutting down');
    const destination = await untilAborted(vetDestination(request.url, { environment: request.environment, allowLoopback: options.allowLoopback, servicePorts: options.servicePorts }, options.resolve ?? systemResolver), controller.signal);
    address = destination.address;
    const headers = deliveryHeaders({
      secret: request.secret,
      body: request.body,
      timestamp: Math.floor(clock() / 1000),
      deliveryId: request.deliveryId,
      eventId: request.eventId,
      test: request.test,
    });
    const sentHeaders = { ...headers, host: destination.url.host, 'content-length': String(Buffer.byteLength(request.body)) };
    if (request.beforeSend) {
      await request.beforeSend({ startedAt, address: destination.address, requestHeaders: sentHeaders }).catch((error: unknown) => {
        throw new AttemptNotStartedError('the attempt could not be recorded before sending', { cause: error });
      });
    }
    requestHeaders = sentHeaders;
    const response = await postToVettedDestination(destination, headers, request.body, controller.signal, options.agents);
    return report({ kind: 'response', status: response.status, retryAfter: response.retryAfter }, response.status, null, await response.excerpt);
  } catch (error) {
    const reason = controller.signal.aborted ? controller.signal.reason : undefined;
    if (error instanceof AttemptNotStartedError) throw error;
    if (reason instanceof AttemptInterruptedError || error instanceof AttemptInterruptedError) throw reason ?? error;
    if (error instanceof BlockedDestinationError) return report({ kind: 'blocked_destination' }, null, error.message);
    if (reason instanceof AttemptTimeout) return report({ kind: 'timeout' }, null, `no response within ${options.timeoutMs} ms`);
    const code = (error as NodeJS.ErrnoException).code;
    return report({ kind: 'network' }, null, code ?? (error as Error).message ?? 'network error');
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onShutdown);
  }
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** A lookup that must never run: the request names an IP, so Node has nothing to resolve. */
const noSecondLookup = (hostname: string, _options: unknown, callback: (error: Error) => void) =>
  callback(new BlockedDestinationError(`refusing a second DNS lookup of ${hostname}`));

/** POSTs to the vetted address only; exported for the pinning test (SNI and Host carry the registered name). */
export function postToVettedDestination(destination: VettedDestination, headers: Record<string, string>, body: string, signal: AbortSignal, agents?: DeliveryAgents) {
  const client = destination.protocol === 'https:' ? https : http;
  const agent = agents ? (destination.protocol === 'https:' ? agents.https : agents.http) : false;
  return new Promise<{ status: number; retryAfter: string | null; excerpt: Promise<{ bytes: Buffer; truncated: boolean }> }>((resolve, reject) => {
    const req = client.request({
      method: 'POST',
      host: destination.address,
      family: destination.family,
      port: destination.port,
      path: `${destination.url.pathname}${destination.url.search}`,
      headers: { ...headers, host: destination.url.host, 'content-length': String(Buffer.byteLength(body)) },
      // SNI and certificate checks use the registered name, not the address connected to.
      servername: isIP(destination.hostname) ? '' : destination.hostname,
      lookup: noSecondLookup as never,
      agent,
      signal,
    });
    req.once('response', (res) => {
      const retryAfter = res.headers['retry-after'];
      // Keep the first bytes for the partner to read; drain (not keep) a little more so the socket
      // can be reused, and drop it past the limit.
      const kept: Buffer[] = [];
      let seen = 0;
      let settle: () => void = () => undefined;
      const excerpt = new Promise<{ bytes: Buffer; truncated: boolean }>((done) => {
        const grace = setTimeout(() => settle(), EXCERPT_GRACE_MS);
        settle = () => {
          clearTimeout(grace);
          // Bytes, not text: a NUL or a broken UTF-8 sequence is stored as it came (bytea).
          const bytes = Buffer.from(Buffer.concat(kept).subarray(0, RESPONSE_EXCERPT_BYTES));
          done({ bytes, truncated: seen > RESPONSE_EXCERPT_BYTES });
          settle = () => undefined;
        };
      });
      res.on('data', (chunk: Buffer) => {
        if (seen < RESPONSE_EXCERPT_BYTES) kept.push(chunk);
        seen += chunk.length;
        if (seen > RESPONSE_EXCERPT_BYTES) settle();
        if (seen > MAX_DISCARDED_BODY_BYTES) res.destroy();
      });
      res.once('end', () => settle());
      res.once('close', () => settle());
      res.on('error', () => undefined);
      res.setTimeout(DISCARD_IDLE_MS, () => res.destroy());
      resolve({ status: res.statusCode ?? 0, retryAfter: typeof retryAfter === 'string' ? retryAfter : null, excerpt });
    });
    req.once('error', reject);
    req.end(body);
  });
}
