import { createHash } from 'node:crypto';
import type { Environment } from '@lop/contract';
import { sql } from 'drizzle-orm';
import { auditRecords, runStatement, statementBuilder, type Sql, type Transaction } from '@lop/db';

/** Where an audited request or action came in. */
export type AuditDoor = 'rest' | 'console' | 'admin' | 'system';

/** One entry of the audit trail before it is stored (docs/audit.md § What is recorded). */
export interface AuditEntry {
  kind: 'read' | 'control';
  laboratoryId?: string | null;
  clientId?: string | null;
  environment?: Environment | null;
  keyId?: string | null;
  /** `key:<display prefix>` for a partner key, `operator:<name>` for an administrator, `system:<what>`. */
  actor: string;
  /** The procedure or command, e.g. `orders.get`, `keys.create`, `lab.releaseResult`. */
  action: string;
  door: AuditDoor;
  route?: string | null;
  status?: number | null;
  requestId?: string | null;
  orderId?: string | null;
  resourceId?: string | null;
  /** Flat facts about a control action (scopes granted, program ids, event types); never a secret or personal text. */
  details?: Record<string, string | number | boolean | null | string[]> | null;
}

/** The row as stored: the entry, its time and its content hash. */
export interface AuditRow {
  recordedAt: Date;
  kind: string;
  laboratoryId: string | null;
  clientId: string | null;
  environment: Environment | null;
  keyId: string | null;
  actor: string;
  action: string;
  door: string;
  route: string | null;
  status: number | null;
  requestId: string | null;
  orderId: string | null;
  resourceId: string | null;
  details: Record<string, unknown> | null;
  contentHash: Buffer;
}

// A caller's path parameter can be anything it sent: stored bounded, never trusted as a uuid.
const MAX_TEXT = 200;
const bounded = (text: string | null | undefined) => (text == null ? null : text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uuidOrNull = (text: string | null | undefined) => (text && UUID.test(text) ? text.toLowerCase() : null);

/** JSON with object keys sorted at every level: jsonb hands keys back in its own order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * The content hash of a record: SHA-256 over every field but its id and seal, in a fixed order.
 * verify recomputes it from the stored columns, so an edited field no longer matches.
 */
export function contentHashOf(row: Omit<AuditRow, 'contentHash'>): Buffer {
  const fields = [
    'lop-audit-v1',
    row.recordedAt.toISOString(),
    row.kind,
    row.laboratoryId,
    row.clientId,
    row.environment,
    row.keyId,
    row.actor,
    row.action,
    row.door,
    row.route,
    row.status,
    row.requestId,
    row.orderId,
    row.resourceId,
    row.details,
  ];
  return createHash('sha256').update(canonicalJson(fields)).digest();
}

/** The row an entry is stored as, stamped now (to the millisecond, as the column keeps it). */
export function auditRow(entry: AuditEntry, recordedAt: Date = new Date()): AuditRow {
  const row = {
    recordedAt: new Date(Math.floor(recordedAt.getTime())),
    kind: entry.kind,
    laboratoryId: uuidOrNull(entry.laboratoryId),
    clientId: uuidOrNull(entry.clientId),
    environment: entry.environment ?? null,
    keyId: uuidOrNull(entry.keyId),
    actor: bounded(entry.actor)!,
    action: bounded(entry.action)!,
    door: entry.door,
    route: bounded(entry.route),
    status: entry.status ?? null,
    requestId: bounded(entry.requestId),
    orderId: bounded(entry.orderId),
    resourceId: bounded(entry.resourceId),
    details: entry.details ?? null,
  };
  return { ...row, contentHash: contentHashOf(row) };
}

/** Who performs a control-plane action: an administrator (the admin CLI's --operator), a partner key, or the service itself. */
export type ControlActor =
  | { kind: 'operator'; name: string }
  | { kind: 'key'; keyId: string; keyPrefix: string; door: 'rest' | 'console'; requestId?: string }
  | { kind: 'system'; name: string };

export interface ControlAction {
  /** e.g. `keys.create`, `programs.grant`, `webhooks.rotate_secret`, `encryption.rotate`. */
  action: string;
  laboratoryId?: string | null;
  clientId?: string | null;
  environment?: Environment | null;
  orderId?: string | null;
  resourceId?: string | null;
  details?: AuditEntry['details'];
}

/** Actions done by code that names no actor (fixtures, loaders): recorded, and visibly unattributed. */
export const UNATTRIBUTED: ControlActor = { kind: 'system', name: 'unattributed' };

/** The row of a control-plane action: who did it, through which door. */
function controlRow(actor: ControlActor, action: ControlAction): AuditRow {
  const who =
    actor.kind === 'operator'
      ? { actor: `operator:${actor.name}`, door: 'admin' as const }
      : actor.kind === 'key'
        ? { actor: `key:${actor.keyPrefix}`, door: actor.door, keyId: actor.keyId, requestId: actor.requestId }
        : { actor: `system:${actor.name}`, door: 'system' as const };
  return auditRow({ kind: 'control', ...action, ...who });
}

// The schema before 0029, which this release also serves (docs/migrations.md): no trail yet. Asked
// first, as a failed insert would abort the caller's transaction.
const TRAIL_EXISTS = "select to_regclass('audit_records') is not null as exists";

/**
 * Records one control-plane action in the caller's transaction, so the record commits with the
 * action or not at all. The one entry point for every control-plane change (keys, grants, webhook
 * subscriptions, laboratory operations, encryption keys).
 */
export async function recordControlAction(tx: Transaction, actor: ControlActor, action: ControlAction): Promise<void> {
  const [{ exists }] = (await tx.execute(sql.raw(TRAIL_EXISTS))) as unknown as { exists: boolean }[];
  if (exists) await tx.insert(auditRecords).values(controlRow(actor, action));
}

/** recordControlAction in a postgres.js transaction (`sql.begin`: the encryption keyring's changes). */
export async function recordControlActionOver(tx: Sql, actor: ControlActor, action: ControlAction): Promise<void> {
  const [{ exists }] = await tx.unsafe<{ exists: boolean }[]>(TRAIL_EXISTS);
  if (exists) await runStatement(tx, statementBuilder.insert(auditRecords).values(controlRow(actor, action)));
}
