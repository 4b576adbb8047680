import { randomUUID } from 'node:crypto';
import { type Environment, EVENT_PAYLOAD_VERSION, type EventType } from '@lop/contract';
import { notifyAfterCommit, sqlOf, type events, type Transaction } from '@lop/db';
import { NO_PARTNER_ACTION, nextActionOf, partnerActionsOf } from '../exceptions/partner-action';
import { PartnerError } from '../http/errors';
import { lockGrantedPrograms } from '../programs/programs';
import { eventDataSchema, type EventData, type PartnerEvent } from './events.schemas';

export interface EventDraft {
  type: EventType;
  occurredAt: Date;
  programId?: string;
  orderId?: string;
  data: EventData;
}

export interface Stream {
  clientId: string;
  environment: Environment;
}

/** An event as the outbox receives it: identified and typed, not yet numbered. */
export interface OutboxEvent {
  event_id: string;
  type: EventType;
}

/**
 * What else must commit with appended events (the transactional outbox), in the transaction that
 * writes them. The webhooks module provides the one implementation and the appendEvents every
 * writer calls (webhooks/outbox.ts); this module never imports it.
 */
export interface EventOutbox {
  /**
   * Whether this transaction may write the outbox before the events it references exist (their
   * existence then checked at commit). False on a schema older than that check's deferral: the
   * outbox is written after the events, inside the stream's numbering.
   */
  mayPrecedeEvents(tx: Transaction): Promise<boolean>;
  write(tx: Transaction, stream: Stream, events: OutboxEvent[]): Promise<void>;
}

/** SQLSTATE of a statement that waited out lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';
const STREAM_BUSY_RETRY_AFTER_SECONDS = 1;

/** The stream's counter row stayed locked by other writes of the client past the pool's lock_timeout. */
const streamBusy = () =>
  new PartnerError('rate_limited', `Too many writes of this API client are being committed at once; retry after ${STREAM_BUSY_RETRY_AFTER_SECONDS} second.`, {
    details: [{ issue: 'too_many_concurrent_writes' }],
    headers: { 'Retry-After': String(STREAM_BUSY_RETRY_AFTER_SECONDS) },
  });

/**
 * Appends events to a client's stream inside the caller's transaction, with their outbox.
 *
 * The stream's counter row is its sequencing point: taking its lock makes sequences dense and
 * ordered by commit (a concurrent writer waits for this transaction, so no reader can see
 * sequence n+1 before n). It is taken as late as the transaction allows and held only for the
 * numbering, the events' insert and the commit: everything else — the partner actions' look-up,
 * validation, the outbox's deliveries and jobs — is written first, and the caller calls this last.
 * A write that waits longer than the pool's lock_timeout for the row is the client's own writes
 * queueing (its capacity, not an outage): 429 with Retry-After, never 503.
 */
/**
 * The channel told of each commit that appends to a stream, with the stream
 * (`<client id>:<environment>`) as payload: the API processes' LISTEN connections wake that
 * stream's waiting reads (waiters.ts). Sent after the commit, not inside it (libs/db after-commit.ts
 * says why); events the previous release appends during a rolling upgrade wake nobody, and those
 * reads answer at their deadline.
 */
export const EVENTS_CHANNEL = 'lop_events';

export const streamKey = (stream: Stream) => `${stream.clientId}:${stream.environment}`;

export async function appendEventsThrough(outbox: EventOutbox, tx: Transaction, stream: Stream, given: EventDraft[]): Promise<PartnerEvent[]> {
  const visible = await ofGrantedPrograms(tx, stream, given);
  if (visible.length === 0) return [];
  const drafts = await withPartnerActions(tx, visible);
  const unnumbered = drafts.map((draft) => ({
    id: randomUUID(),
    clientId: stream.clientId,
    environment: stream.environment,
    type: draft.type,
    version: EVENT_PAYLOAD_VERSION,
    occurredAt: draft.occurredAt,
    programId: draft.programId ?? null,
    orderId: draft.orderId ?? null,
    data: eventDataSchema.parse(draft.data),
  }));
  const outboxEvents = unnumbered.map((row) => ({ event_id: row.id, type: row.type }));
  const outboxFirst = await outbox.mayPrecedeEvents(tx);
  if (outboxFirst) await outbox.write(tx, stream, outboxEvents);

  // postgres.js directly, on the transaction's connection: these run with every order change,
  // and its statements stay prepared per connection (no query building, no re-planning).
  const client = sqlOf(tx);
  // Returns, with the numbers, whether the schema stores each event's partner JSON (0014): this
  // release also serves the schema before it.
  const [{ last, stores_body: storesBody }] = await client<{ last: string; stores_body: boolean }[]>`
    insert into event_streams (client_id, environment, last_sequence)
    values (${stream.clientId}, ${stream.environment}, ${drafts.length})
    on conflict (client_id, environment) do update set last_sequence = event_streams.last_sequence + ${drafts.length}
    returning last_sequence as last, exists (select from pg_attribute where attrelid = 'events'::regclass and attname = 'body' and not attisdropped) as stores_body`.catch(
    (error: unknown) => {
      throw (error as { code?: unknown }).code === LOCK_NOT_AVAILABLE ? streamBusy() : error;
    },
  );
  const first = Number(last) - drafts.length + 1;
  const rows = unnumbered.map((row, i) => ({ ...row, sequence: first + i }));
  const appended = rows.map(toPartnerEvent);
  // drizzle's client passes timestamps and JSON through as text: they are serialised here.
  const columns = rows.map((row, i) => ({
    id: row.id,
    client_id: row.clientId,
    environment: row.environment,
    sequence: row.sequence,
    type: row.type,
    version: row.version,
    occurred_at: row.occurredAt.toISOString(),
    program_id: row.programId,
    order_id: row.orderId,
    data: JSON.stringify(row.data),
    // The bytes partners get: GET /v1/events and webhook bodies send them as they are (stream.ts).
    ...(storesBody ? { body: JSON.stringify(appended[i]) } : {}),
  }));
  await client`insert into events ${client(columns)}`;
  // On a schema without the deferred check, the outbox follows the events it references.
  if (!outboxFirst) await outbox.write(tx, stream, outboxEvents);
  // Wakes the stream's waiting reads (GET /v1/events?wait, waiters.ts) once this commits.
  await notifyAfterCommit(tx, EVENTS_CHANNEL, streamKey(stream));
  return appended;
}

/**
 * Only events the stream's client may still see: an event of a program whose grant was withdrawn
 * (`admin programs revoke`) is about an order that answers 404 to the client, so it is neither
 * appended nor delivered — before numbering, so it spends no sequence and the stream stays dense.
 * The grants stay locked (FOR KEY SHARE) until commit: a revoke waits for this append, or is seen
 * by it. Events suppressed while a program is revoked are not replayed when it is granted again.
 */
async function ofGrantedPrograms(tx: Transaction, stream: Stream, drafts: EventDraft[]): Promise<EventDraft[]> {
  const programIds = drafts.flatMap((draft) => (draft.programId ? [draft.programId] : []));
  if (programIds.length === 0) return drafts;
  const granted = await lockGrantedPrograms(tx, stream.clientId, stream.environment, programIds);
  return granted.size === new Set(programIds).size ? drafts : drafts.filter((draft) => !draft.programId || granted.has(draft.programId));
}

/**
 * Every event that states an order's next_action states it as GET order does at commit: the
 * draft carries the state's, and nextActionOf (exceptions/partner-action.ts) turns it into the
 * one a partner-owned open exception of the order asks — whichever code built the draft. A new
 * order has no exceptions: its order.created needs no look-up.
 */
async function withPartnerActions(tx: Transaction, drafts: EventDraft[]): Promise<EventDraft[]> {
  const statesNextAction = (d: EventDraft): d is EventDraft & { orderId: string } => Boolean(d.orderId) && d.data.next_action !== undefined;
  const orderIds = [...new Set(drafts.filter((d) => d.type !== 'order.created' && statesNextAction(d)).map((d) => d.orderId!))];
  if (orderIds.length === 0) return drafts;
  const actions = await partnerActionsOf(tx, orderIds);
  return drafts.map((draft) => {
    if (!statesNextAction(draft)) return draft;
    const nextAction = nextActionOf(draft.data.next_action!, actions.get(draft.orderId) ?? NO_PARTNER_ACTION);
    return nextAction === draft.data.next_action ? draft : { ...draft, data: { ...draft.data, next_action: nextAction } };
  });
}

/**
 * The one rendering of an event's `data`, whether from a draft (at append, into events.body) or
 * from the jsonb column (events an earlier release wrote): jsonb hands `data` back with its keys
 * reordered (shortest first, then bytewise), so the data keys are put in the schema's order, and
 * the open-ended `links` in jsonb's own order, the order partners have always received them in.
 * The stored bytes and the ones rendered from the columns are then the same.
 */
const DATA_KEYS = Object.keys(eventDataSchema.shape) as (keyof EventData)[];

const jsonbKeyOrder = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

function inSchemaOrder(data: EventData): EventData {
  const ordered: Record<string, unknown> = {};
  for (const key of DATA_KEYS) if (data[key] !== undefined) ordered[key] = data[key];
  if (data.links) ordered.links = Object.fromEntries(Object.entries(data.links).sort(([a], [b]) => jsonbKeyOrder(a, b)));
  return ordered as EventData;
}

export function toPartnerEvent(row: Omit<typeof events.$inferSelect, 'createdAt' | 'body'>): PartnerEvent {
  return {
    event_id: row.id,
    type: row.type as EventType,
    version: row.version,
    occurred_at: row.occurredAt.toISOString(),
    environment: row.environment,
    ...(row.programId ? { program_id: row.programId } : {}),
    sequence: Number(row.sequence),
    data: inSchemaOrder(row.data as EventData),
  };
}
