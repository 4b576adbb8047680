import { randomUUID } from 'node:crypto';
import { sqlOf, type events, type Transaction } from '@lop/db';
import type { Environment } from '../auth/scopes';
import { actionRequiredCodes, partnerActionFor } from '../exceptions/resolution';
import { EVENT_PAYLOAD_VERSION } from '../versions';
import { eventDataSchema, type EventData, type EventType, type PartnerEvent } from './events.schemas';

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

/**
 * What else must commit with appended events (the transactional outbox): called last, in the
 * transaction that wrote them. The webhooks module provides the one implementation and the
 * appendEvents every writer calls (webhooks/outbox.ts); this module never imports it.
 */
export type EventOutbox = (tx: Transaction, stream: Stream, appended: PartnerEvent[]) => Promise<void>;

/**
 * Appends events to a client's stream inside the caller's transaction, and hands them to the outbox.
 * Taking the stream counter's row lock makes sequences dense and ordered by commit: a concurrent
 * writer waits for this transaction, so no reader can see sequence n+1 before n. Call it last in
 * the transaction to keep that lock short.
 */
export async function appendEventsThrough(outbox: EventOutbox, tx: Transaction, stream: Stream, given: EventDraft[]): Promise<PartnerEvent[]> {
  if (given.length === 0) return [];
  const drafts = await withPartnerActions(tx, given);
  // postgres.js directly, on the transaction's connection: these run with every order change,
  // and its statements stay prepared per connection (no query building, no re-planning).
  const client = sqlOf(tx);
  const [{ last }] = await client<{ last: string }[]>`
    insert into event_streams (client_id, environment, last_sequence)
    values (${stream.clientId}, ${stream.environment}, ${drafts.length})
    on conflict (client_id, environment) do update set last_sequence = event_streams.last_sequence + ${drafts.length}
    returning last_sequence as last`;
  const first = Number(last) - drafts.length + 1;
  const rows = drafts.map((draft, i) => ({
    id: randomUUID(),
    clientId: stream.clientId,
    environment: stream.environment,
    sequence: first + i,
    type: draft.type,
    version: EVENT_PAYLOAD_VERSION,
    occurredAt: draft.occurredAt,
    programId: draft.programId ?? null,
    orderId: draft.orderId ?? null,
    data: eventDataSchema.parse(draft.data),
  }));
  // drizzle's client passes timestamps and JSON through as text: they are serialised here.
  const columns = rows.map((row) => ({
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
  }));
  await client`insert into events ${client(columns)}`;
  const appended = rows.map(toPartnerEvent);
  // Same transaction: webhook deliveries (and their pg-boss jobs) commit with the events or not at all.
  await outbox(tx, stream, appended);
  return appended;
}

/**
 * Every event that states an order's next_action states it as GET order does at commit: while
 * the partner owns an open exception of the order, the action that exception asks (lifecycle.ts,
 * nextActionOf) — whichever code built the draft. A new order has no exceptions: its
 * order.created needs no look-up.
 */
async function withPartnerActions(tx: Transaction, drafts: EventDraft[]): Promise<EventDraft[]> {
  const orderIds = [...new Set(drafts.filter((d) => d.type !== 'order.created' && d.orderId && d.data.next_action !== undefined).map((d) => d.orderId!))];
  if (orderIds.length === 0) return drafts;
  const open = await actionRequiredCodes(tx, orderIds);
  if (open.size === 0) return drafts;
  return drafts.map((draft) => {
    const category = draft.orderId && draft.data.next_action !== undefined ? open.get(draft.orderId) : undefined;
    return category ? { ...draft, data: { ...draft.data, next_action: partnerActionFor(category) } } : draft;
  });
}

/**
 * jsonb hands `data` back with its keys reordered (shortest first), while GET /v1/events writes
 * them in the schema's order. A webhook body must be byte for byte the stream's object, so both
 * paths rebuild `data` in the schema's order.
 */
const DATA_KEYS = Object.keys(eventDataSchema.shape) as (keyof EventData)[];

function inSchemaOrder(data: EventData): EventData {
  const ordered: Record<string, unknown> = {};
  for (const key of DATA_KEYS) if (data[key] !== undefined) ordered[key] = data[key];
  return ordered as EventData;
}

export function toPartnerEvent(row: Omit<typeof events.$inferSelect, 'createdAt'>): PartnerEvent {
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
