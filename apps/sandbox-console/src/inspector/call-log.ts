import { useSyncExternalStore } from 'react';

/**
 * Every call the console makes, as the request inspector shows it: what was sent (procedure,
 * input, Idempotency-Key) and what came back (the REST envelope, its status and request_id, the
 * response headers). Kept in memory for this tab only; the API key is never recorded.
 */
export interface RecordedCall {
  id: number;
  /** tRPC procedure path, e.g. `orders.create`. */
  path: string;
  type: 'query' | 'mutation' | 'subscription';
  input: unknown;
  idempotencyKey?: string;
  startedAt: number;
  state: 'pending' | 'ok' | 'error';
  durationMs?: number;
  /** The REST status the same call answers with (the tRPC door carries it in error.data.httpStatus). */
  status?: number;
  requestId?: string;
  /** The JSON body REST answers with: the success envelope, or the error envelope. */
  response?: unknown;
  responseHeaders?: Record<string, string>;
  /** Set when the API could not be reached at all. */
  networkError?: string;
}

const LIMIT = 200;
let calls: RecordedCall[] = [];
let nextId = 1;
const listeners = new Set<() => void>();

function emit() {
  for (const listener of listeners) listener();
}

export const callLog = {
  start(call: Omit<RecordedCall, 'id' | 'state' | 'startedAt'>): number {
    const id = nextId++;
    calls = [...calls.slice(-(LIMIT - 1)), { ...call, id, state: 'pending', startedAt: performance.now() }];
    emit();
    return id;
  },
  finish(id: number, outcome: Partial<RecordedCall> & Pick<RecordedCall, 'state'>): void {
    calls = calls.map((c) => (c.id === id ? { ...c, ...outcome, durationMs: Math.round(performance.now() - c.startedAt) } : c));
    emit();
  },
  clear(): void {
    calls = [];
    emit();
  },
  subscribe(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  snapshot(): RecordedCall[] {
    return calls;
  },
};

/** Response metadata by X-Request-Id, captured by the fetch wrapper and claimed by the link. */
const responseMeta = new Map<string, { status: number; headers: Record<string, string> }>();

/** Headers worth showing: ours and the standard ones a partner branches on. */
const SHOWN_HEADERS = /^(x-request-id|idempotent-replayed|retry-after|ratelimit.*|www-authenticate|content-type|location)$/i;

export async function recordingFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const response = await fetch(input, init);
  const requestId = response.headers.get('x-request-id');
  if (requestId) {
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      if (SHOWN_HEADERS.test(name)) headers[name] = value;
    });
    responseMeta.set(requestId, { status: response.status, headers });
    // Claimed right after; anything unclaimed (a cancelled query) must not pile up.
    if (responseMeta.size > 100) responseMeta.delete(responseMeta.keys().next().value!);
  }
  return response;
}

export function claimResponseMeta(requestId: string | undefined) {
  if (!requestId) return undefined;
  const meta = responseMeta.get(requestId);
  responseMeta.delete(requestId);
  return meta;
}

export function useCalls(): RecordedCall[] {
  return useSyncExternalStore(callLog.subscribe, callLog.snapshot);
}

const sameInput = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The newest call of `path` (whose input matches `match`, when given): what an inspector next to
 * a view shows. Polling views get their newest read.
 */
export function useLatestCall(path: string | string[], match?: (call: RecordedCall) => boolean): RecordedCall | undefined {
  const all = useCalls();
  const paths = Array.isArray(path) ? path : [path];
  for (let i = all.length - 1; i >= 0; i--) {
    const call = all[i];
    if (paths.includes(call.path) && (!match || match(call))) return call;
  }
  return undefined;
}

/** Matches calls whose input has these values (other input fields may differ). */
export function inputIs(expected: Record<string, unknown>) {
  return (call: RecordedCall) => Object.entries(expected).every(([k, v]) => sameInput((call.input as Record<string, unknown> | undefined)?.[k], v));
}
