import type { PartnerRouter } from '@lop/domain';
import { createTRPCClient, httpLink, TRPCClientError, type TRPCClient, type TRPCLink } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import type { inferRouterOutputs } from '@trpc/server';
import { observable } from '@trpc/server/observable';
import { callLog, claimResponseMeta, recordingFetch } from './inspector/call-log';

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<PartnerRouter>();

export type Outputs = inferRouterOutputs<PartnerRouter>;
export type ConsoleClient = TRPCClient<PartnerRouter>;

/** Per-call options: the create call sends its own Idempotency-Key. */
export interface CallContext {
  idempotencyKey?: string;
  /** A poll the console makes by itself (the event stream): sent with X-Console-Background, so the request log leaves it out. */
  background?: boolean;
  [key: string]: unknown;
}

/** What the console does when a call says the key no longer works (revoked, expired: 401). */
export type OnUnauthorized = (described: DescribedError) => void;

/**
 * Records every call for the request inspector (call-log.ts), and hands a 401 to the session:
 * a revoked or expired key sends the reader back to the key screen, with the API's reason.
 */
function recordingLink(onUnauthorized?: OnUnauthorized): TRPCLink<PartnerRouter> {
  return () =>
    ({ op, next }) =>
      observable((observer) => {
        const id = callLog.start({ path: op.path, type: op.type, input: op.input, idempotencyKey: (op.context as CallContext).idempotencyKey });
        const subscription = next(op).subscribe({
          next(value) {
            const body = (value.result as { data?: { request_id?: string } }).data;
            // The FHIR view answers a resource without the envelope: its request id is in the header.
            const requestId = body?.request_id ?? (value.context?.response as Response | undefined)?.headers.get('x-request-id') ?? undefined;
            const meta = claimResponseMeta(requestId);
            callLog.finish(id, { state: 'ok', response: body, requestId, status: undefined, responseHeaders: meta?.headers });
            observer.next(value);
          },
          error(error) {
            const described = describeError(error);
            const partner = (error.data as { partner?: unknown } | undefined)?.partner;
            const meta = claimResponseMeta(described.requestId);
            callLog.finish(id, {
              state: 'error',
              status: described.httpStatus,
              requestId: described.requestId,
              response: partner,
              responseHeaders: meta?.headers,
              networkError: described.code === 'network_error' ? described.message : undefined,
            });
            if (described.httpStatus === 401) onUnauthorized?.(described);
            observer.error(error);
          },
          complete() {
            observer.complete();
          },
        });
        return () => subscription.unsubscribe();
      });
}

/**
 * The console speaks tRPC to the very procedures partners reach as REST, with the same key
 * (`Authorization: Bearer …`) and the same checks, at {origin}/api/trpc.
 */
export function createConsoleClient(key: string, onUnauthorized?: OnUnauthorized): ConsoleClient {
  return createTRPCClient<PartnerRouter>({
    links: [
      recordingLink(onUnauthorized),
      httpLink({
        url: '/api/trpc',
        fetch: recordingFetch,
        headers: ({ op }) => {
          const headers: Record<string, string> = { authorization: `Bearer ${key}` };
          const idempotencyKey = (op.context as CallContext).idempotencyKey;
          if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
          if ((op.context as CallContext).background) headers['x-console-background'] = '1';
          return headers;
        },
      }),
    ],
  });
}

export interface DescribedError {
  code: string;
  message: string;
  /** The REST status of the same failure (the tRPC door carries it); none when the API was not reached. */
  httpStatus?: number;
  requestId?: string;
  details: { field?: string; issue: string; message?: string }[];
}

/** Our error envelope travels in error.data.partner; anything else is a network or client failure. */
export function describeError(error: unknown): DescribedError {
  if (error instanceof TRPCClientError) {
    const data = error.data as { httpStatus?: number; partner?: { error: { code: string; message: string; details?: DescribedError['details'] }; request_id: string } } | undefined;
    const partner = data?.partner;
    if (partner) return { code: partner.error.code, message: partner.error.message, httpStatus: data.httpStatus, requestId: partner.request_id, details: partner.error.details ?? [] };
    if (!error.data) return { code: 'network_error', message: 'The API could not be reached. Is `npm start` still running?', details: [] };
    return { code: 'error', message: error.message, httpStatus: data?.httpStatus, details: [] };
  }
  return { code: 'error', message: error instanceof Error ? error.message : String(error), details: [] };
}

/** Statuses that will answer the same however often the call is repeated: retrying cannot help. */
export function isFinal(error: unknown): boolean {
  const status = describeError(error).httpStatus;
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429;
}
