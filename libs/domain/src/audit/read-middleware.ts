import { z } from 'zod';
import { errorBodyFor } from '../http/error-response';
import { PartnerError } from '../http/errors';
import type { Caller } from '../auth/authenticate';
import type { ReadAuditWriter } from './read-audit';

/** What the audit needs of a procedure's meta (trpc.ts ProcedureMeta). */
interface AuditedMeta {
  audit?: { orderId: string; resourceId?: string; details?: string[] };
  openapi?: { method: string; path: string };
  successStatus?: number;
}

/** What the audit needs of the request context (context.ts RequestContext). */
interface AuditedContext {
  door: 'rest' | 'console';
  requestId: string;
  audit: ReadAuditWriter;
  identified: { caller?: Caller };
  response: { status?: number };
}

type Outcome = { ok: true } | { ok: false; error: unknown };

const SERVICE_ID = z.uuid();

/**
 * An id the caller sent, when it is one of the service's ids (every audited input is). Anything
 * else is the caller's own text (a name or an email typed into a path, a NUL byte) and is not
 * kept: the record still has the route and the refusal's status.
 */
function inputId(input: unknown, field: string | undefined): string | null {
  if (!field || !input || typeof input !== 'object') return null;
  const value = (input as Record<string, unknown>)[field];
  return SERVICE_ID.safeParse(value).success ? (value as string) : null;
}

/**
 * Writes the audit record of one answered read and resolves once it is committed. A call whose key
 * was not recognised (401: no key, unknown or revoked key) has nobody to attribute it to and is
 * not recorded (the access log has it); every other answer is, refusals included (403, 404, 429,
 * 400), with the status it was answered with: probing is what an auditor looks for.
 */
export async function auditRead(
  ctx: AuditedContext,
  meta: AuditedMeta,
  path: string,
  getRawInput: () => Promise<unknown>,
  outcome: Outcome,
): Promise<void> {
  const caller = ctx.identified.caller;
  if (!caller || !meta.audit) return;
  const input = await getRawInput().catch(() => undefined);
  // The status as the door answers it: REST makes a malformed path id a 404, the console's door a 400.
  const pathParams = ctx.door === 'rest' && meta.openapi ? [...meta.openapi.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]) : [];
  const status = outcome.ok ? (ctx.response.status ?? meta.successStatus ?? 200) : errorBodyFor(outcome.error, ctx.requestId, pathParams).status;
  const details = meta.audit.details?.length
    ? Object.fromEntries(meta.audit.details.map((field) => [field, inputId(input, field)]).filter(([, v]) => v !== null))
    : null;
  await ctx.audit.record({
    kind: 'read',
    laboratoryId: caller.laboratoryId,
    clientId: caller.clientId,
    environment: caller.environment,
    keyId: caller.keyId,
    actor: `key:${caller.keyPrefix}`,
    action: path,
    door: ctx.door,
    route: meta.openapi ? `${meta.openapi.method} ${meta.openapi.path}` : null,
    status,
    requestId: ctx.requestId,
    orderId: inputId(input, meta.audit.orderId),
    resourceId: inputId(input, meta.audit.resourceId),
    details: details && Object.keys(details).length > 0 ? (details as Record<string, string>) : null,
  });
}

/** A read whose record could not be written is not answered with data: 503, as any unavailable database. */
export function auditUnavailable(cause: unknown): PartnerError {
  return new PartnerError('unavailable', 'The service is temporarily unavailable; retry shortly.', { headers: { 'Retry-After': '5' }, cause });
}
