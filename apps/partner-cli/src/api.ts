import { LOP_USER_AGENT_PRODUCT, PARTNER_BASE_PATH } from '@lop/contract';
import createClient from 'openapi-fetch';
import type { components, paths } from './generated/partner-api';

/**
 * The partner REST API as a partner reaches it: the client generated from the OpenAPI document
 * (openapi-typescript types + openapi-fetch), an API key, and the spec's {base_url}. Nothing
 * else: the CLI is what a partner installs, so it never touches the service's internals.
 */

export type Schemas = components['schemas'];
export type PartnerEvent = Schemas['Event'];
export type EventType = Schemas['EventType'];

export const DEFAULT_BASE_URL = `http://127.0.0.1:3000${PARTNER_BASE_PATH}`;

/** Each call gives up after this long (the listener's own forwarding has its own timeout). */
const REQUEST_TIMEOUT_MS = 30_000;

export type PartnerClient = ReturnType<typeof createClient<paths>>;

export interface Api {
  client: PartnerClient;
  /** The spec's {base_url}, e.g. http://127.0.0.1:3000/api/public/partner */
  baseUrl: string;
}

/** The command cannot run as asked (exit code 2): a missing key, a bad value, the wrong environment. */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    readonly code = 'usage',
    /** The API's error envelope when the service refused the value (a cursor): what --json prints. */
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/** The API answered with its error envelope (exit code 1). */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
    readonly details: { field?: string; issue?: string }[],
    /** The envelope as received, for --json. */
    readonly body: unknown,
  ) {
    super(message);
  }
}

/** The service could not be reached or did not answer in time (exit code 1). */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
}

/**
 * `{origin}/api/public/partner` as the spec's {base_url}; an origin alone or a URL ending in
 * `/v1` (as `npm start` prints the API base) is read as the base URL it means.
 */
export function normaliseBaseUrl(text: string): { baseUrl: string; origin: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`the base URL is not a URL: ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`the base URL must be http:// or https://, got ${text}`);
  if (url.search || url.hash) throw new UsageError(`the base URL takes no query or fragment: ${text}`);
  let path = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (path === '') path = PARTNER_BASE_PATH;
  if (!path.endsWith(PARTNER_BASE_PATH)) throw new UsageError(`the base URL must be {origin}${PARTNER_BASE_PATH} (the spec's {base_url}), got ${text}`);
  // The generated paths carry the base path, so the client's own base is what precedes it.
  const origin = `${url.origin}${path.slice(0, -PARTNER_BASE_PATH.length)}`;
  return { baseUrl: `${origin}${PARTNER_BASE_PATH}`, origin };
}

export function createApi(options: { apiKey: string; baseUrl: string }): Api {
  const { baseUrl, origin } = normaliseBaseUrl(options.baseUrl);
  const client = createClient<paths>({
    baseUrl: origin,
    // The sandbox request log tells lop's own requests by this User-Agent (source `lop`).
    headers: { Authorization: `Bearer ${options.apiKey}`, 'User-Agent': `${LOP_USER_AGENT_PRODUCT}/${CLI_VERSION}` },
    fetch: async (request: Request) => {
      try {
        return await fetch(request, { signal: AbortSignal.any([request.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]) });
      } catch (error) {
        if (request.signal.aborted) throw error;
        throw new UnreachableError(`cannot reach ${baseUrl} (${describeNetworkError(error)}); is the service running? (npm start prints its base URL)`);
      }
    },
  });
  return { client, baseUrl };
}

export const CLI_VERSION = '0.1.0';

export function describeNetworkError(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return 'no answer in time';
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

/** openapi-fetch answers `{ data, error, response }`; a failure becomes an ApiError carrying the API's envelope. */
export function must<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error === undefined && result.data !== undefined) return result.data;
  throw toApiError(result.response, result.error);
}

export function toApiError(response: Response, body: unknown): ApiError {
  const envelope = body as { error?: { code?: unknown; message?: unknown; details?: unknown }; request_id?: unknown } | undefined;
  const error = envelope?.error;
  const requestId = typeof envelope?.request_id === 'string' ? envelope.request_id : response.headers.get('x-request-id');
  if (error && typeof error.code === 'string') {
    const details = Array.isArray(error.details) ? (error.details as { field?: string; issue?: string }[]) : [];
    return new ApiError(response.status, error.code, typeof error.message === 'string' ? error.message : '', requestId, details, body);
  }
  // Not our envelope: a proxy or another service answered.
  const text = typeof body === 'string' ? body.slice(0, 200) : '';
  return new ApiError(response.status, `http_${response.status}`, `unexpected answer ${response.status} ${response.statusText}${text ? `: ${text}` : ''}`, requestId, [], body);
}

/** GET /v1/health: the key's environment decides what the commands may do. */
export async function environmentOf(api: Api): Promise<Schemas['Environment']> {
  return must(await api.client.GET('/api/public/partner/v1/health')).data.environment;
}

/** Refuses a production key with a usage error; `allow` is the explicit opt-in where one exists. */
export async function requireSandbox(api: Api, command: string, allow?: { flag: string; given: boolean }): Promise<Schemas['Environment']> {
  const environment = await environmentOf(api);
  if (environment === 'production' && !allow?.given) {
    throw new UsageError(
      allow
        ? `this is a production key: ${command} refuses it unless you pass ${allow.flag} (it only reads the stream; be sure you want production events on this machine)`
        : `this is a production key: ${command} works with sandbox keys only (lop_test_…)`,
      'production_key_refused',
    );
  }
  return environment;
}
