import type { Environment, Scope } from '@lop/contract';
import { and, eq, inArray, isNull } from 'drizzle-orm';
import { apiClients, apiKeys, laboratories, programGrants, programs, type Database, type Sql, type Transaction } from '@lop/db';
import { displayPrefix, generateApiKey, hashApiKey } from '../auth/api-key';
import { recordControlAction, recordControlActionOver, UNATTRIBUTED, type ControlActor } from '../audit/record';
import type { DataProtector } from '../security/protector';
import { retireEncryptionKey, rotateEncryptionKey, type RecordKeyChange } from '../security/key-rotation';

/**
 * Control-plane operations for laboratory administrators (admin CLI). They are not partner
 * routes: whoever can run them can already reach the database. Each change is recorded in the
 * audit trail in its own transaction (docs/audit.md), attributed to `actor` (the admin CLI's
 * --operator); code that names none (fixtures, loaders) is recorded as system:unattributed.
 */
export class ControlPlaneError extends Error {
  override name = 'ControlPlaneError';
}

export async function createClient(db: Database, laboratoryId: string, name: string, actor: ControlActor = UNATTRIBUTED) {
  const [lab] = await db.select({ id: laboratories.id }).from(laboratories).where(eq(laboratories.id, laboratoryId));
  if (!lab) throw new ControlPlaneError(`no laboratory ${laboratoryId}`);
  const client = await db.transaction(async (tx) => {
    const [row] = await tx.insert(apiClients).values({ laboratoryId, name }).returning();
    await recordControlAction(tx, actor, { action: 'clients.create', laboratoryId, clientId: row.id, resourceId: row.id });
    return row;
  });
  return { client_id: client.id, laboratory_id: client.laboratoryId, name: client.name, status: client.status };
}

async function getClient(db: Database | Transaction, clientId: string) {
  const [client] = await db.select().from(apiClients).where(eq(apiClients.id, clientId));
  if (!client) throw new ControlPlaneError(`no API client ${clientId}`);
  return client;
}

/** Grants programs of the client's laboratory in one environment; granting twice is harmless. */
export async function grantPrograms(db: Database, input: { clientId: string; environment: Environment; programId?: string; all?: boolean }, actor: ControlActor = UNATTRIBUTED) {
  const client = await getClient(db, input.clientId);
  if (!input.all && !input.programId) throw new ControlPlaneError('name a program (--program <id>) or --all');
  const candidates = await db
    .select({ id: programs.id, name: programs.name })
    .from(programs)
    .where(
      and(
        eq(programs.laboratoryId, client.laboratoryId),
        eq(programs.environment, input.environment),
        ...(input.all ? [] : [eq(programs.id, input.programId!)]),
      ),
    );
  if (!input.all && candidates.length === 0) {
    throw new ControlPlaneError(`program ${input.programId} is not a ${input.environment} program of the client's laboratory`);
  }
  await db.transaction(async (tx) => {
    if (candidates.length > 0) {
      await tx
        .insert(programGrants)
        .values(candidates.map((p) => ({ clientId: client.id, programId: p.id, environment: input.environment })))
        .onConflictDoNothing();
    }
    await recordControlAction(tx, actor, {
      action: 'programs.grant',
      laboratoryId: client.laboratoryId,
      clientId: client.id,
      environment: input.environment,
      resourceId: input.programId ?? null,
      details: { all: input.all === true, program_ids: candidates.map((p) => p.id) },
    });
  });
  return { client_id: client.id, environment: input.environment, granted: candidates.map((p) => ({ program_id: p.id, name: p.name })) };
}

/**
 * Withdraws programs from an API client in one environment: from then on the programs, and their
 * orders, results, reports and retrieval paths, are 404 for the client's keys on both doors
 * (programs.ts, orderProgramGranted). Nothing else is deleted: granting again restores them.
 * Revoking what is not granted is harmless.
 */
export async function revokeProgramGrants(
  db: Database,
  input: { clientId: string; environment: Environment; programId?: string; all?: boolean },
  actor: ControlActor = UNATTRIBUTED,
) {
  const client = await getClient(db, input.clientId);
  if (!input.all && !input.programId) throw new ControlPlaneError('name a program (--program <id>) or --all');
  const revoked = await db.transaction(async (tx) => {
    const rows = await tx
      .delete(programGrants)
      .where(and(eq(programGrants.clientId, client.id), eq(programGrants.environment, input.environment), ...(input.all ? [] : [eq(programGrants.programId, input.programId!)])))
      .returning({ programId: programGrants.programId });
    await recordControlAction(tx, actor, {
      action: 'programs.revoke',
      laboratoryId: client.laboratoryId,
      clientId: client.id,
      environment: input.environment,
      resourceId: input.programId ?? null,
      details: { all: input.all === true, program_ids: rows.map((r) => r.programId) },
    });
    return rows;
  });
  const names = revoked.length
    ? await db
        .select({ id: programs.id, name: programs.name })
        .from(programs)
        .where(
          inArray(
            programs.id,
            revoked.map((r) => r.programId),
          ),
        )
    : [];
  return {
    client_id: client.id,
    environment: input.environment,
    revoked: names.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id)).map((p) => ({ program_id: p.id, name: p.name })),
  };
}

/**
 * Creates a key; its text is returned here once and never stored. `purpose` marks a key the
 * service manages itself (see demo-seed.ts); administrators' keys have none.
 */
export async function createKey(
  db: Database | Transaction,
  input: { clientId: string; environment: Environment; scopes: Scope[]; expiresAt?: Date; purpose?: string },
  actor: ControlActor = UNATTRIBUTED,
) {
  const client = await getClient(db, input.clientId);
  const key = generateApiKey(input.environment);
  // Inside a caller's transaction this is a savepoint: the key and its record still commit together.
  const row = await db.transaction(async (tx) => {
    const [inserted] = await tx
      .insert(apiKeys)
      .values({
        clientId: client.id,
        laboratoryId: client.laboratoryId,
        environment: input.environment,
        keyHash: hashApiKey(key),
        displayPrefix: displayPrefix(key),
        scopes: input.scopes,
        purpose: input.purpose ?? null,
        expiresAt: input.expiresAt ?? null,
      })
      .returning();
    await recordControlAction(tx, actor, {
      action: 'keys.create',
      laboratoryId: client.laboratoryId,
      clientId: client.id,
      environment: input.environment,
      resourceId: inserted.id,
      details: { key_prefix: inserted.displayPrefix, scopes: inserted.scopes, expires_at: inserted.expiresAt?.toISOString() ?? null, purpose: inserted.purpose },
    });
    return inserted;
  });
  return { key, key_id: row.id, client_id: client.id, environment: row.environment, scopes: row.scopes, expires_at: row.expiresAt?.toISOString() ?? null };
}

export async function listKeys(db: Database, clientId: string) {
  await getClient(db, clientId);
  const rows = await db.select().from(apiKeys).where(eq(apiKeys.clientId, clientId)).orderBy(apiKeys.createdAt);
  const now = new Date();
  return rows.map((k) => ({
    key_id: k.id,
    prefix: k.displayPrefix,
    environment: k.environment,
    scopes: k.scopes,
    purpose: k.purpose,
    status: k.revokedAt ? 'revoked' : k.expiresAt && k.expiresAt <= now ? 'expired' : 'active',
    created_at: k.createdAt.toISOString(),
    expires_at: k.expiresAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
  }));
}

/** Revocation is a row update read by every request on every replica: effective at once. */
export async function revokeKey(db: Database, keyId: string, actor: ControlActor = UNATTRIBUTED) {
  const row = await db.transaction(async (tx) => {
    // Revoking again keeps the original revocation time.
    await tx.update(apiKeys).set({ revokedAt: new Date() }).where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)));
    const [key] = await tx.select().from(apiKeys).where(eq(apiKeys.id, keyId));
    if (!key) throw new ControlPlaneError(`no API key ${keyId}`);
    await recordControlAction(tx, actor, {
      action: 'keys.revoke',
      laboratoryId: key.laboratoryId,
      clientId: key.clientId,
      environment: key.environment,
      resourceId: key.id,
      details: { key_prefix: key.displayPrefix },
    });
    return key;
  });
  return { key_id: row.id, revoked_at: row.revokedAt!.toISOString() };
}

export async function listClients(db: Database, laboratoryId?: string) {
  const rows = await db
    .select()
    .from(apiClients)
    .where(laboratoryId ? eq(apiClients.laboratoryId, laboratoryId) : undefined)
    .orderBy(apiClients.createdAt);
  return rows.map((c) => ({ client_id: c.id, laboratory_id: c.laboratoryId, name: c.name, status: c.status }));
}

/** The audit record of a keyring change, written in the keyring's own transaction. */
const recordKeyChange =
  (actor: ControlActor): RecordKeyChange =>
  (tx, { action, version, current_version }) =>
    recordControlActionOver(tx, actor, { action, resourceId: `key-version:${version}`, details: { version, current_version } });

/** `admin encryption rotate`: a new key version for personal data at rest (security/key-rotation.ts), recorded in the audit trail. */
export function rotateEncryptionKeyAs(sql: Sql, protector: DataProtector, actor: ControlActor = UNATTRIBUTED) {
  return rotateEncryptionKey(sql, protector, recordKeyChange(actor));
}

/** `admin encryption retire`: an old key version deleted once no row needs it, recorded in the audit trail. */
export function retireEncryptionKeyAs(sql: Sql, version: number, actor: ControlActor = UNATTRIBUTED) {
  return retireEncryptionKey(sql, version, recordKeyChange(actor));
}
