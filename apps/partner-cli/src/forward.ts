import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { deliveryHeaders } from '@lop/contract';

/**
 * One delivery to the local handler, built as the service's delivery worker builds it
 * (docs/webhooks.md § A delivery): the same headers and signature (@lop/contract), a new
 * x-partner-delivery-id per attempt, 10 seconds per attempt, redirects not followed. Only the
 * secret is the listener's own.
 */

/** The service's per-attempt limit. */
export const ATTEMPT_TIMEOUT_MS = 10_000;

const hmacSha256Hex = (key: string, message: string) => createHmac('sha256', key).update(message).digest('hex');

export interface AttemptOutcome {
  /** The handler's status code, or null when none came back. */
  status: number | null;
  /** Why there was no status (ECONNREFUSED, timeout), else null. */
  error: string | null;
  durationMs: number;
  deliveryId: string;
}

export class InterruptedError extends Error {
  override name = 'InterruptedError';
}

/**
 * TLS errors that mean the handler's certificate is not trusted (self-signed, unknown issuer,
 * expired, another name): trying again changes nothing, `--skip-verify` does.
 */
const CERTIFICATE_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export const isCertificateError = (outcome: Pick<AttemptOutcome, 'error'>) => outcome.error !== null && CERTIFICATE_ERRORS.has(outcome.error);

/** What a certificate error means and what to do, once per run. */
export const certificateHint = (url: URL, code: string) =>
  `the certificate of ${url.host} is not trusted (${code}): for a local handler with a self-signed certificate, pass --skip-verify (the forward target only; the API's certificate is still checked)`;

export const skipVerifyWarning = (url: URL) => `warning: --skip-verify: the certificate of ${url.host} is not checked; use it only for a handler on your own machine`;

export interface AttemptOptions {
  /** --skip-verify: accept any certificate from the forward target (never the API's). */
  skipVerify?: boolean;
}

/** One POST of the exact body; never throws for the handler's answer, only when interrupted. */
export async function attempt(url: URL, secret: string, body: string, eventId: string, signal: AbortSignal, options: AttemptOptions = {}): Promise<AttemptOutcome> {
  const deliveryId = randomUUID();
  const headers = deliveryHeaders(hmacSha256Hex, { secret, body, timestamp: Math.floor(Date.now() / 1000), eventId, deliveryId });
  const began = performance.now();
  const done = (status: number | null, error: string | null): AttemptOutcome => ({ status, error, durationMs: Math.round(performance.now() - began), deliveryId });
  if (signal.aborted) throw new InterruptedError();
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<AttemptOutcome>((resolve, reject) => {
    let settled = false;
    const request = client.request(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      ...(url.protocol === 'https:' && options.skipVerify ? { rejectUnauthorized: false } : {}),
    });
    const finish = (outcome: AttemptOutcome | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(() => {
      finish(done(null, `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`));
      request.destroy();
    }, ATTEMPT_TIMEOUT_MS);
    const onAbort = () => {
      finish(new InterruptedError());
      request.destroy();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    request.once('response', (response) => {
      finish(done(response.statusCode ?? null, null));
      // The handler's body is never read (as the service does), only drained.
      response.resume();
    });
    request.once('error', (error: NodeJS.ErrnoException) => finish(done(null, error.code ?? error.message)));
    request.end(body);
  });
}

/** The service's classes (docs/webhooks.md § Retries): these are tried again, anything else is final. An untrusted certificate is final too. */
export function isRetryable(outcome: Pick<AttemptOutcome, 'status' | 'error'>): boolean {
  const { status } = outcome;
  if (isCertificateError(outcome)) return false;
  return status === null || status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}

export const isDelivered = (outcome: Pick<AttemptOutcome, 'status'>) => outcome.status !== null && outcome.status >= 200 && outcome.status < 300;

/**
 * Waits before attempt n+1: 0.5 s, 1 s, 2 s, then 4 s. The service's schedule (1 minute up to 24
 * hours) is for the internet; on a laptop the point is to see a failing handler retried now.
 */
export function backoffMs(attemptNumber: number): number {
  return Math.min(500 * 2 ** (attemptNumber - 1), 4_000);
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new InterruptedError());
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new InterruptedError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
