import { type Environment, EVENT_TYPES, type EventType, generateSigningSecret } from '@lop/contract';
import { and, asc, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { recordControlAction, UNATTRIBUTED, type ControlActor } from '../audit/record';
import { apiClients, apiKeys, webhookSubscriptions, type Database, type Transaction } from '@lop/db';
import type { Tenant } from '../auth/authenticate';
import type { DataProtector } from '../security/protector';
import { cancelPendingDeliveries } from './delivery-store';
import { BlockedDestinationError, blockedReason, checkDestinationUrl, systemResolver, type DestinationPolicy, type Resolver } from './destination-guard';
import { subscriptionDisabled, WebhookError } from './errors';

/**
 * Control-plane operations on webhook subscriptions (admin CLI). The signing secret is returned
 * only by create and rotate-secret, and stored only encrypted.
 */

/** The same policy every delivery attempt applies (webhookSettings(config).destination). */
export interface RegistrationGuard extends DestinationPolicy {
  resolve?: Resolver;
}

/** Parses a comma list of event types, or `all`. */
export function parseEventTypeList(text: string): EventType[] {
  if (text.trim() === 'all') return [...EVENT_TYPES];
  const types = text.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = types.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) throw new Error(`unknown event type(s): ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}`);
  if (types.length === 0) throw new Error('at least one event type is required');
  return [...new Set(types)] as EventType[];
}

export type SubscriptionRow = typeof webhookSubscriptions.$inferSelect;

export function describeSubscription(row: SubscriptionRow) {
  return {
    subscription_id: row.id,
    client_id: row.clientId,
    laboratory_id: row.laboratoryId,
    environment: row.environment,
    url: row.url,
    event_types: row.eventTypes as EventType[],
    status: row.status,
    created_at: row.createdAt.toISOString(),
    secret_rotated_at: row.secretRotatedAt?.toISOString() ?? null,
    disabled_at: row.disabledAt?.toISOString() ?? null,
  };
}

/**
 * Registration refuses a destination that is not public now. Delivery checks again at every
 * attempt, so a name that later resolves somewhere private is refused then; a name that does not
 * resolve yet is accepted (the partner may register before publishing DNS).
 */
async function checkRegistrationUrl(url: string, environment: Environment, guard: RegistrationGuard): Promise<string> {
  try {
    const checked = checkDestinationUrl(url, { environment, allowLoopback: guard.allowLoopback, servicePorts: guard.servicePorts });
    if (!checked.loopback && !/^\[.*\]$|^[\d.]+$/.test(checked.hostname)) {
      const addresses = await (guard.resolve ?? systemResolver)(checked.hostname).catch(() => [] as string[]);
      for (const address of addresses) {
        const reason = blockedReason(address);
        if (reason) throw new BlockedDestinationError(`${checked.hostname} resolves to a non-public address: ${reason}`);
      }
    }
    return checked.url.toString();
  } catch (error) {
    if (error instanceof BlockedDestinationError) throw new WebhookError('refused_destination', `refused destination: ${error.message}`, error.message);
    throw error;
  }
}

/** A subscription needs an active client with an active (unrevoked, unexpired) key in that environment. */
async function checkEligibility(db: Database, clientId: string, environment: Environment) {
  const [client] = await db.select().from(apiClients).where(eq(apiClients.id, clientId));
  if (!client) throw new WebhookError('not_found', `no API client ${clientId}`);
  if (client.status !== 'active') throw new WebhookError('not_allowed', `API client ${clientId} is ${client.status}; only an active client can have webhooks`);
  const [key] = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(
      and(
        eq(apiKeys.clientId, clientId),
        eq(apiKeys.environment, environment),
        isNull(apiKeys.revokedAt),
        or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, sql`now()`)),
      ),
    )
    .limit(1);
  if (!key) throw new WebhookError('not_allowed', `API client ${clientId} has no active ${environment} key; create one first (keys create)`);
  return client;
}

/**
 * `maxActive` caps the active subscriptions of the (client, environment). It is checked inside the
 * inserting transaction under a transaction-scoped advisory lock of that pair, so concurrent
 * creations (a batch of calls) cannot all pass one count and insert past the cap. The lock is
 * taken after the destination check (DNS), so it is held only for the count and the insert.
 */
export async function createSubscription(
  db: Database,
  protector: DataProtector,
  input: { clientId: string; environment: Environment; url: string; eventTypes: EventType[]; maxActive?: number },
  guard: RegistrationGuard,
  actor: ControlActor = UNATTRIBUTED,
) {
  const client = await checkEligibility(db, input.clientId, input.environment);
  const url = await checkRegistrationUrl(input.url, input.environment, guard);
  const secret = generateSigningSecret();
  const row = await db.transaction(async (tx) => {
    if (input.maxActive !== undefined) {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext('webhook_subscriptions'), hashtext(${`${client.id}:${input.environment}`}))`);
      const [{ active }] = await tx
        .select({ active: sql<number>`count(*)::int` })
        .from(webhookSubscriptions)
        .where(and(eq(webhookSubscriptions.clientId, client.id), eq(webhookSubscriptions.environment, input.environment), eq(webhookSubscriptions.status, 'active')));
      if (active >= input.maxActive) throw new WebhookError('subscription_limit', `at most ${input.maxActive} active webhook subscriptions per API client and environment`);
    }
    const [inserted] = await tx
      .insert(webhookSubscriptions)
      .values({
        laboratoryId: client.laboratoryId,
        clientId: client.id,
        environment: input.environment,
        url,
        eventTypes: input.eventTypes,
        secretProtected: protector.encrypt(secret),
      })
      .returning();
    // The secret itself is never recorded.
    await recordControlAction(tx, actor, {
      action: 'webhooks.create',
      laboratoryId: inserted.laboratoryId,
      clientId: inserted.clientId,
      environment: inserted.environment,
      resourceId: inserted.id,
      details: { url: inserted.url, event_types: inserted.eventTypes },
    });
    return inserted;
  });
  return { ...describeSubscription(row), secret };
}

export async function listSubscriptions(db: Database, filter: { clientId?: string } = {}) {
  const rows = await db
    .select()
    .from(webhookSubscriptions)
    .where(filter.clientId ? eq(webhookSubscriptions.clientId, filter.clientId) : undefined)
    .orderBy(desc(webhookSubscriptions.createdAt));
  return rows.map(describeSubscription);
}

export async function getSubscription(db: Database | Transaction, subscriptionId: string): Promise<SubscriptionRow> {
  const [row] = await db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, subscriptionId));
  if (!row) throw new WebhookError('not_found', `no webhook subscription ${subscriptionId}`);
  return row;
}

const ownedBy = (owner: Tenant) =>
  and(eq(webhookSubscriptions.laboratoryId, owner.laboratoryId), eq(webhookSubscriptions.clientId, owner.clientId), eq(webhookSubscriptions.environment, owner.environment));

/** The owner's subscriptions, newest first (or oldest first). */
export async function subscriptionsOf(db: Database, owner: Tenant, order: 'newest' | 'oldest' = 'newest'): Promise<SubscriptionRow[]> {
  return db
    .select()
    .from(webhookSubscriptions)
    .where(ownedBy(owner))
    .orderBy(order === 'newest' ? desc(webhookSubscriptions.createdAt) : asc(webhookSubscriptions.createdAt));
}

/** The owner's subscription `subscriptionId`, or undefined (another owner's, or none). */
export async function findOwnedSubscription(db: Database, owner: Tenant, subscriptionId: string): Promise<SubscriptionRow | undefined> {
  const [row] = await db.select().from(webhookSubscriptions).where(and(eq(webhookSubscriptions.id, subscriptionId), ownedBy(owner)));
  return row;
}

/** Chooses which event types the subscription receives from now on (events already emitted are not delivered again). */
export async function setSubscriptionEventTypes(db: Database, subscriptionId: string, eventTypes: EventType[], actor: ControlActor = UNATTRIBUTED): Promise<void> {
  await db.transaction(async (tx) => {
    const [row] = await tx
      .update(webhookSubscriptions)
      .set({ eventTypes: [...new Set(eventTypes)] })
      .where(eq(webhookSubscriptions.id, subscriptionId))
      .returning();
    if (row) await recordControlAction(tx, actor, { action: 'webhooks.update', ...subscriptionScope(row), details: { event_types: row.eventTypes } });
  });
}

const subscriptionScope = (row: SubscriptionRow) => ({ laboratoryId: row.laboratoryId, clientId: row.clientId, environment: row.environment, resourceId: row.id });

/** Stops deliveries at once: pending ones are cancelled, and new events no longer match. */
export async function disableSubscription(db: Database, subscriptionId: string, actor: ControlActor = UNATTRIBUTED) {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(webhookSubscriptions)
      .set({ status: 'disabled', disabledAt: sql`coalesce(${webhookSubscriptions.disabledAt}, now())` })
      .where(eq(webhookSubscriptions.id, subscriptionId))
      .returning();
    if (!row) throw new WebhookError('not_found', `no webhook subscription ${subscriptionId}`);
    const cancelled = await cancelPendingDeliveries(tx, { subscriptionId }, new Date());
    await recordControlAction(tx, actor, { action: 'webhooks.disable', ...subscriptionScope(row), details: { cancelled_deliveries: cancelled.length } });
    return { ...describeSubscription(row), cancelled_deliveries: cancelled.length };
  });
}

/**
 * Replaces the secret. Every attempt signs with the secret stored at that moment, so the old one
 * is invalid from the next attempt on, retries of earlier events included.
 */
export async function rotateSubscriptionSecret(db: Database, protector: DataProtector, subscriptionId: string, actor: ControlActor = UNATTRIBUTED) {
  const existing = await getSubscription(db, subscriptionId);
  if (existing.status !== 'active') throw subscriptionDisabled(subscriptionId);
  const secret = generateSigningSecret();
  const row = await db.transaction(async (tx) => {
    const [updated] = await tx
      .update(webhookSubscriptions)
      .set({ secretProtected: protector.encrypt(secret), secretRotatedAt: new Date() })
      .where(eq(webhookSubscriptions.id, subscriptionId))
      .returning();
    await recordControlAction(tx, actor, { action: 'webhooks.rotate_secret', ...subscriptionScope(updated) });
    return updated;
  });
  return { ...describeSubscription(row), secret };
}
