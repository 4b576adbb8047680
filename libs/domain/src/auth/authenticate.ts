import type { Environment, Scope } from '@lop/contract';
import type { Sql } from '@lop/db';
import { PartnerError } from '../http/errors';
import { hashApiKey, keyEnvironment } from './api-key';

/** Who is calling: everything a key may see is filtered by these four values. */
export interface Caller {
  keyId: string;
  /** The key's display prefix (`lop_test_AbCd`): enough to recognise it, not to use it. */
  keyPrefix: string;
  clientId: string;
  laboratoryId: string;
  environment: Environment;
  scopes: ReadonlySet<Scope>;
  /**
   * The client's event stream counter (client and environment) on the primary when the key was
   * checked, read in the same query: a replica may answer this caller only once it shows the stream
   * at least this far (reads/read-routing.ts). Absent: not known, reads stay on the primary.
   */
  readPosition?: number;
}

/** Whose data a query may touch: one laboratory's API client in one environment (a caller, or the owner of a row). */
export type Tenant = Pick<Caller, 'laboratoryId' | 'clientId' | 'environment'>;

// RFC 7235: a 401 names the scheme the client should use.
const unauthorized = (message: string) => new PartnerError('unauthorized', message, { headers: { 'WWW-Authenticate': 'Bearer realm="partner-api"' } });

/**
 * Resolves the Authorization header to a caller. Revocation and expiry are read from
 * PostgreSQL on every request, so they take effect at once on every replica.
 */
export async function authenticate(sql: Sql, authorization: string | undefined, now = new Date()): Promise<Caller> {
  if (!authorization) throw unauthorized('Send the API key as "Authorization: Bearer <API_KEY>".');
  const match = /^Bearer ([^\s]+)$/i.exec(authorization.trim());
  if (!match) throw unauthorized('The Authorization header must be "Bearer <API_KEY>".');
  const key = match[1];
  const claimedEnvironment = keyEnvironment(key);
  if (!claimedEnvironment) throw unauthorized('The API key is not valid.');

  const [row] = await sql<
    { id: string; display_prefix: string; client_id: string; laboratory_id: string; environment: Environment; scopes: string[]; expired: boolean; revoked: boolean; client_status: string; stream_sequence: string }[]
  >`
    select k.id, k.display_prefix, k.client_id, k.laboratory_id, k.environment, k.scopes, c.status as client_status,
           k.revoked_at is not null as revoked,
           k.expires_at is not null and k.expires_at <= ${now.toISOString()}::timestamptz as expired,
           coalesce(s.last_sequence, 0) as stream_sequence
    from api_keys k join api_clients c on c.id = k.client_id
    left join event_streams s on s.client_id = k.client_id and s.environment = k.environment
    where k.key_hash = ${hashApiKey(key)}`;

  if (!row || row.environment !== claimedEnvironment) throw unauthorized('The API key is not valid.');
  if (row.revoked) throw unauthorized('The API key has been revoked.');
  if (row.expired) throw unauthorized('The API key has expired.');
  if (row.client_status !== 'active') throw unauthorized('The API client of this key is disabled.');

  return {
    keyId: row.id,
    keyPrefix: row.display_prefix,
    clientId: row.client_id,
    laboratoryId: row.laboratory_id,
    environment: row.environment,
    scopes: new Set(row.scopes as Scope[]),
    readPosition: Number(row.stream_sequence),
  };
}

export function requireScope(caller: Caller, scope: Scope): void {
  if (!caller.scopes.has(scope)) {
    throw new PartnerError('forbidden', `This API key lacks the "${scope}" scope this endpoint needs.`);
  }
}
