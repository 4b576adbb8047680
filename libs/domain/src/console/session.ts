import { SCOPES } from '@lop/contract';
import { and, eq } from 'drizzle-orm';
import { apiClients, apiKeys, type Database } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { PartnerError } from '../http/errors';
import type { ConsoleSession } from './console.schemas';

/**
 * What the console tells the reader about the key in use: its prefix, environment, scopes and
 * expiry, so actions the key cannot perform are disabled with the reason instead of failing on
 * click. Only the caller's own key is read; its hash never leaves the database.
 */
export async function describeConsoleSession(db: Database, caller: Caller): Promise<ConsoleSession> {
  const [row] = await db
    .select({ key: apiKeys, clientName: apiClients.name })
    .from(apiKeys)
    .innerJoin(apiClients, eq(apiClients.id, apiKeys.clientId))
    .where(and(eq(apiKeys.id, caller.keyId), eq(apiKeys.clientId, caller.clientId)));
  // authenticate() has just read this key; gone now means revoked and deleted in between.
  if (!row) throw new PartnerError('unauthorized', 'The API key is not valid.');
  const scopes = SCOPES.filter((s) => caller.scopes.has(s));
  return {
    key_id: row.key.id,
    key_prefix: row.key.displayPrefix,
    environment: row.key.environment,
    scopes,
    missing_scopes: SCOPES.filter((s) => !caller.scopes.has(s)),
    expires_at: row.key.expiresAt?.toISOString() ?? null,
    created_at: row.key.createdAt.toISOString(),
    client_id: row.key.clientId,
    client_name: row.clientName,
  };
}
