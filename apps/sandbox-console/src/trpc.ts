import type { PartnerRouter } from '@lop/domain';
import { createTRPCClient, httpLink, TRPCClientError, type TRPCClient } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import type { inferRouterOutputs } from '@trpc/server';

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<PartnerRouter>();

export type Outputs = inferRouterOutputs<PartnerRouter>;
export type ConsoleClient = TRPCClient<PartnerRouter>;

/** Per-call options: the create call sends its own Idempotency-Key. */
export interface CallContext {
  idempotencyKey?: string;
  [key: string]: unknown;
}

/**
 * The console speaks tRPC to the very procedures partners reach as REST, with the same key
 * (`Authorization: Bearer …`) and the same checks, at {origin}/api/trpc.
 */
export function createConsoleClient(key: string): ConsoleClient {
  return createTRPCClient<PartnerRouter>({
    links: [
      httpLink({
        url: '/api/trpc',
        headers: ({ op }) => {
          const headers: Record<string, string> = { authorization: `Bearer ${key}` };
          const idempotencyKey = (op.context as CallContext).idempotencyKey;
          if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
          return headers;
        },
      }),
    ],
  });
}

export interface DescribedError {
  code: string;
  message: string;
  requestId?: string;
  details: { field?: string; issue: string; message?: string }[];
}

/** Our error envelope travels in error.data.partner; anything else is a network or client failure. */
export function describeError(error: unknown): DescribedError {
  if (error instanceof TRPCClientError) {
    const partner = (error.data as { partner?: { error: { code: string; message: string; details?: DescribedError['details'] }; request_id: string } } | undefined)?.partner;
    if (partner) return { code: partner.error.code, message: partner.error.message, requestId: partner.request_id, details: partner.error.details ?? [] };
    if (!error.data) return { code: 'network_error', message: 'The API could not be reached. Is `npm start` still running?', details: [] };
    return { code: 'error', message: error.message, details: [] };
  }
  return { code: 'error', message: error instanceof Error ? error.message : String(error), details: [] };
}
